"""Applying a migration plan on the real database (``memory.migration``, SPEC §18.3),
property-tested: random memories saved under one routing spec and set of declarations,
then sections renamed, removed or re-tiered and the spec's version changed (or another
spec named), then the plan applied by a reviewer at the page or by a token. Asking
again leaves exactly the plan's conflicts, and every memory that moved sits at its new
address with the outcome its new section's tier gives it, worked out here from the
declarations alone (SPEC §5.4, §19.1 earned, §19.4 instruction-shaped).
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from django.contrib.auth.models import User
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lens.actors import Actor
from lens.agents import get_agent
from lens.core.config import AgentConfig
from lens.models import Team
from memory.configuring import store_config
from memory.core.records import MemoryInput
from memory.migration import apply_migration, migration_plan
from memory.models import MigratedPromotion, Promotion
from memory.saving import save_memory
from tests.factories import create_agent
from tests.samples import SAMPLE_CONFIG, V2_SPECS

pytestmark = pytest.mark.django_db

DEFAULT_SPECS = ["memory.core.presets.USER_BACKGROUND", "memory.core.presets.PROJECT"]
TIERS = ("auto", "guarded", "locked", "earned")
# Where user-background 1 routes (user_profile, user_preferences), where version 2 does
# (about_user, preferences), and the project spec's sections: each declared at a tier, or
# not at all. ``notes`` is always declared, so a Background is never empty.
SECTIONS = ("user_profile", "user_preferences", "about_user", "preferences", "project_state")
KINDS = ("profile", "preference", "state", "decision", "note")
FACTS = ("Dark theme", "Lives in Gdansk", "Mira", "Prefers tea", "The team deploys on Fridays")
ORDERS = ("Always answer in French", "Never mention the weather")
CONTENTS = FACTS + ORDERS
LABELS = ("name", "city", "theme", None)
SESSIONS = ("s1", "s2", "s3", None)
SPECS = ("user-background@1", "user-background@2", "project")

_agents = itertools.count()
RUNTIME = Actor(label="runtime")

declarations = st.fixed_dictionaries({s: st.sampled_from((*TIERS, None)) for s in SECTIONS})
saves = st.lists(
    st.tuples(
        st.sampled_from(KINDS),
        st.sampled_from(CONTENTS),
        st.sampled_from(LABELS),
        st.sampled_from(SESSIONS),
    ),
    max_size=10,
)
worlds = st.fixed_dictionaries(
    {
        "before": declarations,
        "saved": saves,
        "spec": st.sampled_from(SPECS),
        "after": declarations,
        "saved_after": saves,
        "reviewer": st.booleans(),
    }
)


def config(tiers: dict[str, str | None], spec: str) -> dict[str, Any]:
    sections = [
        {
            "id": "notes",
            "title": "Notes",
            "promotion": "locked",
            "entries": [{"key": "k", "value": "v"}],
        }
    ]
    sections += [
        {"id": section, "title": section.replace("_", " ").title(), "promotion": tier}
        for section, tier in tiers.items()
        if tier is not None
    ]
    routing = "project" if spec == "project" else "user-background"
    return {
        **SAMPLE_CONFIG,
        "name": "Wren",
        "routing_spec": routing,
        "background": {"sections": sections},
    }


def save_all(agent: Any, saved: list[tuple[str, str, str | None, str | None]]) -> None:
    for kind, content, label, session in saved:
        # A conflict or a sighting answers as it does; the plan reads whatever holds.
        save_memory(
            agent, MemoryInput(kind=kind, content=content, label=label, session=session), RUNTIME
        )


def expected_outcome(
    target: Any, content: str, tiers: dict[str, str | None], reviewer: bool
) -> tuple[str, str]:
    """The status and reason re-promotion commits, from the declarations alone."""
    if target is None:
        return "declined", "spec-declined"
    tier = tiers.get(target.section)
    if tier is None:
        return "declined", "undeclared-section"
    if tier == "locked":
        return "declined", "locked-section"
    order = content in ORDERS
    if tier == "earned":  # waits for sightings, or (an order) a person, however applied
        return "pending", "instruction-shaped" if order else "earning"
    if reviewer:  # the reviewer's act approves what waits for a person
        return "approved", ""
    if tier == "auto" and not order:
        return "approved", ""
    return "pending", "instruction-shaped" if tier == "auto" else ""


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(worlds)
def test_applying_the_plan_then_asking_again_leaves_only_its_conflicts(
    team: Team, settings: Any, reviewer: User, world: dict[str, Any]
) -> None:
    settings.MEMORY_ROUTING_SPECS = DEFAULT_SPECS
    slug = f"m{next(_agents)}"
    agent = create_agent(team, slug, config(world["before"], "user-background@1"))
    save_all(agent, world["saved"])
    if world["spec"] == "user-background@2":
        settings.MEMORY_ROUTING_SPECS = V2_SPECS
    store_config(team, slug, AgentConfig.model_validate(config(world["after"], world["spec"])))
    agent = get_agent(team, slug)
    save_all(agent, world["saved_after"])  # holders at the new addresses: conflicts
    agent = get_agent(team, slug)

    first = migration_plan(agent)
    if world["reviewer"]:
        actor, approve = Actor.for_user(reviewer), True
    else:
        actor, approve = Actor(label="token abc…"), False
    applied = apply_migration(agent, first.sha256, actor=actor, approve_guarded=approve)

    again = migration_plan(agent)
    conflicts = [move.as_json() for move in first.moves if not move.moves]
    assert [move.as_json() for move in again.moves] == conflicts
    assert all(move.outcome == "conflict" for move in again.moves)
    if not conflicts:
        assert again.moves == ()

    movers = [move for move in first.moves if move.moves]
    assert [move.memory_id for move in applied.moved] == [move.memory_id for move in movers]
    rows = Promotion.objects.select_related("record").in_bulk([m.memory_id for m in movers])
    archived = set(MigratedPromotion.objects.values_list("record_id", flat=True))
    for move in movers:
        row = rows[move.memory_id]
        target = move.target
        assert (row.section, row.key) == (
            (target.section, target.key) if target is not None else (None, None)
        )
        status, reason = expected_outcome(target, row.record.content, world["after"], approve)
        assert (row.status, row.reason) == (status, reason), move
        assert applied.outcomes[move.memory_id] == status
        if status != "approved":
            assert row.decided_by is None
        elif move.outcome == "pending":  # approved by the reviewer's act alone
            assert row.decided_by == reviewer
        assert (row.spec_key, row.spec_version) == (first.spec_key, first.spec_version)
        assert move.memory_id in archived
