"""Proposals under concurrency, on the real database (SPEC §14): two reviewers racing to
decide land exactly one decision, two proposals made on the same revision publish
one and leave the other stale, and changes racing on a protected agent all wait.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import transaction

from lens.actors import Actor
from lens.core.config import AgentConfig
from lens.core.errors import DomainError
from lens.models import Agent, ApiToken, Proposal, Revision, Team, Via
from lens.proposals import propose, reject_proposal
from memory.configuring import publish_proposal
from tests.api_calls import ApiClient
from tests.factories import grant, make_user, race
from tests.samples import SAMPLE_CONFIG

pytestmark = pytest.mark.django_db(transaction=True)


def config(**changes: Any) -> dict[str, Any]:
    return {**json.loads(json.dumps(SAMPLE_CONFIG)), "protected": True, **changes}


def setup() -> tuple[Team, str]:
    team = Team.objects.create(slug="acme", name="Acme")
    _token, raw = ApiToken.objects.issue(team)
    assert ApiClient(raw).put("/api/agents/wren", config()).status_code == 201
    return team, raw


def decide_or_refuse(call: Any) -> str:
    try:
        return str(call().status)
    except DomainError as refused:
        return refused.code


def test_two_reviewers_racing_on_one_proposal_land_one_decision() -> None:
    team, raw = setup()
    client = ApiClient(raw)
    made = client.put("/api/agents/wren", config(persona="x")).json()["proposal_id"]
    reviewers = [Actor.for_user(grant(make_user(f"r{n}", team))) for n in range(2)]

    outcomes = race(
        2,
        lambda n: decide_or_refuse(
            (lambda: publish_proposal(team, made, reviewers[0]))
            if n == 0
            else (lambda: reject_proposal(team, made, reviewers[1], "no"))
        ),
    )

    assert sorted(outcomes) in (
        ["proposal_decided", "published"],
        ["proposal_decided", "rejected"],
    )
    final = Proposal.objects.get(pk=made)
    assert final.status in ("published", "rejected")
    expected = 2 if final.status == "published" else 1
    assert list(Revision.objects.values_list("number", flat=True).order_by("number")) == list(
        range(1, expected + 1)
    )


def test_two_proposals_on_one_revision_publish_one_and_leave_the_other_stale() -> None:
    team, raw = setup()
    client = ApiClient(raw)
    made = [
        client.put("/api/agents/wren", config(persona=f"version {n}")).json()["proposal_id"]
        for n in range(2)
    ]
    reviewer = Actor.for_user(grant(make_user("rhea", team)))

    outcomes = race(
        2, lambda n: decide_or_refuse(lambda: publish_proposal(team, made[n], reviewer))
    )

    # The loser finds the agent moved: marked stale by the winner's revision (then its
    # own attempt is refused as decided), or by its own check of the base.
    assert "published" in outcomes
    assert sorted(Proposal.objects.values_list("status", flat=True)) == ["published", "stale"]
    assert Revision.objects.count() == 2
    winner = Proposal.objects.get(status="published")
    persona = client.get("/api/agents/wren").json()["persona"]
    assert persona == f"version {made.index(winner.pk)}"


def test_changes_racing_on_a_protected_agent_all_wait_as_proposals() -> None:
    _team, raw = setup()

    answers = race(
        6,
        lambda n: ApiClient(raw).put("/api/agents/wren", config(persona=f"v{n}")),
    )

    assert [answer.status_code for answer in answers] == [202] * 6
    assert {answer.json()["base_revision"] for answer in answers} == {1}
    assert Proposal.objects.filter(status="pending").count() == 6
    assert Revision.objects.count() == 1


def test_a_publish_racing_a_direct_change_loses_neither() -> None:
    """An unprotected agent with a proposal still waiting (made while it was protected):
    a publish and a direct PUT at once. Either the publish lands and the PUT follows as
    the next revision, or the PUT lands first and the proposal goes stale: never a
    publish written over a newer revision."""
    team = Team.objects.create(slug="acme", name="Acme")
    _token, raw = ApiToken.objects.issue(team)
    assert ApiClient(raw).put("/api/agents/wren", config(protected=False)).status_code == 201
    agent = Agent.objects.get(slug="wren")
    with transaction.atomic():
        made = propose(
            agent,
            Actor(label="maya"),
            Via.ADMIN,
            AgentConfig.model_validate(config(protected=False, persona="Proposed.")),
        )
    assert made is not None
    reviewer = Actor.for_user(grant(make_user("rhea", team)))

    def act(n: int) -> str:
        if n == 0:
            return decide_or_refuse(lambda: publish_proposal(team, made.pk, reviewer))
        answer = ApiClient(raw).put("/api/agents/wren", config(protected=False, tone="Direct."))
        return str(answer.status_code)

    outcomes = race(2, act)

    rows = list(Revision.objects.filter(agent=agent).order_by("number"))
    final = ApiClient(raw).get("/api/agents/wren").json()
    assert final["tone"] == "Direct."  # the PUT is never lost
    if outcomes[0] == "published":
        assert [(r.number, r.via) for r in rows] == [(1, "api"), (2, "proposal"), (3, "api")]
        # The PUT replaced the whole config after the publish, as a PUT does.
        assert final["persona"] == SAMPLE_CONFIG["persona"]
    else:
        # The PUT's revision marked the proposal stale as it committed (the publish
        # then finds it decided), or the publish found the agent moved on itself.
        assert outcomes[0] in ("stale", "proposal_decided")
        assert [(r.number, r.via) for r in rows] == [(1, "api"), (2, "api")]
        assert Proposal.objects.get(pk=made.pk).status == "stale"
