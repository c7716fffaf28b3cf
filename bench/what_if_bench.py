"""What-if (SPEC §18.2): ``what-if?last=50`` for the 40-section agent with 1,000 memories
(goal under 300 ms), in process. The agent is delivered after every 20 memories saved,
so each of its 50 deliveries was made from another state (the replay's worst case: no
two of them compose from the same inputs). Each change kind is measured, and a plain
composition of the agent in the same run for scale.
``DEBUG=1 .venv/bin/python -m bench what_if_bench`` runs it alone.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from bench.data import big_memory_config, memory_plan
from lens.actors import SYSTEM, Actor
from lens.agents import get_agent
from lens.models import Team
from memory.composition import compose
from memory.configuring import store_agent
from memory.core.records import MemoryInput
from memory.core.what_if import Change, ConfigChange, DecisionChange, OrderChange, SpecChange
from memory.decisions import decide
from memory.deliveries.ledger import deliver
from memory.models import Promotion, PromotionStatus
from memory.saving import Saved, save_memory
from memory.what_if import what_if

_RUN = uuid.uuid4().hex[:8]
DELIVER_EVERY = 20
TARGET_MS = 300
ORDER = "another order of the 40 sections"


def run(median_ms: Callable[..., float], report: Callable[..., None]) -> None:
    print("\nWhat-if, 40 sections/2,000 entries/1,000 memories, last=50 (50 states)")
    team = Team.objects.create(slug=f"bench-whatif-{_RUN}", name="Bench what-if")
    config = big_memory_config()
    store_agent(team, "big", config)
    agent = get_agent(team, "big")
    reviewer = Actor(label="bench reviewer")
    ids: list[str] = []
    for n, planned in enumerate(memory_plan()):
        supersedes = None if planned.supersedes is None else ids[planned.supersedes]
        data = MemoryInput(
            kind=planned.kind, content=planned.content, label=planned.label, supersedes=supersedes
        )
        saved = save_memory(agent, data, SYSTEM)
        assert isinstance(saved, Saved), saved
        ids.append(saved.id)
        if planned.fate in ("approve", "reject"):
            decide(saved.id, planned.fate == "approve", reviewer)
        if n % DELIVER_EVERY == DELIVER_EVERY - 1:
            deliver(get_agent(team, "big"), reviewer)
    agent = get_agent(team, "big")
    pending = (
        Promotion.objects.filter(agent=agent, status=PromotionStatus.PENDING)
        .values_list("record_id", flat=True)
        .first()
    )
    assert pending is not None
    order = tuple(reversed([section.id for section in config.background.sections]))
    changes: dict[str, Change] = {
        "approve a pending memory": DecisionChange(pending, "approve"),
        ORDER: OrderChange(order),
        "a config (a new persona)": ConfigChange(
            config.model_copy(update={"persona": "You are terse."})
        ),
        "no routing spec": SpecChange(None),
    }
    plain = median_ms(lambda: compose(get_agent(team, "big")), 20)
    report("a plain composition of the agent (load + compose)", plain)
    for name, change in changes.items():
        found = what_if(agent, change, 50)
        took = median_ms(lambda change=change: what_if(get_agent(team, "big"), change, 50), 10)
        report(f"what-if: {name}", took, TARGET_MS)
        print(
            f"    {took / plain:.1f}× a composition; {found.replay.changed} of"
            f" {found.replay.deliveries} prompts would change; cached prefix"
            f" {found.replay.prefix_tokens_mean_before or 0:,.0f} →"
            f" {found.replay.prefix_tokens_mean_after or 0:,.0f} tokens"
        )
    # A page's line shows the figures alone: no prompt diff.
    took = median_ms(lambda: what_if(get_agent(team, "big"), changes[ORDER], 50, diff=False), 10)
    report("what-if: that order without the diff (a page's line)", took, TARGET_MS)


def cleanup() -> None:
    Team.objects.filter(slug=f"bench-whatif-{_RUN}").delete()
