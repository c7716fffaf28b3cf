"""Protected agents through the API (SPEC §14): a change by anyone becomes a proposal
(202, nothing changed), proposals are listed and read with their config, and only a
person other than the proposer publishes or rejects one; a proposal made on an older
revision goes stale and never overwrites a newer one.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User

from lens.actors import Actor
from lens.core.config import AgentConfig
from lens.core.errors import DomainError
from lens.core.revisions import config_sha256
from lens.models import Agent, Proposal, Revision, StoredConfig, Team, Via
from lens.proposals import (
    REASON_MAX,
    NotProposer,
    OwnProposal,
    ProposalDecided,
    ProposalNotFound,
    reject_proposal,
    withdraw_proposal,
)
from lens.revisions import current_number
from memory.configuring import publish_proposal, store_config
from tests.api_calls import ApiClient, assert_error
from tests.samples import SAMPLE_CONFIG

pytestmark = pytest.mark.django_db


def config(**changes: Any) -> dict[str, Any]:
    return {**json.loads(json.dumps(SAMPLE_CONFIG)), **changes}


def state() -> tuple[Any, ...]:
    """Everything a proposal must leave as it was: the agent's rows and revisions."""
    agent = Agent.objects.get(slug="wren")
    return (
        list(Revision.objects.order_by("pk").values_list("pk", "number", "config_id")),
        (agent.name, agent.persona, agent.protected, agent.routing_spec),
        list(agent.sections.order_by("position").values_list("section_id", "title", "promotion")),
    )


@pytest.fixture
def protected(api: ApiClient) -> dict[str, Any]:
    """wren, created protected: revision 1 takes effect at once."""
    answer = api.put("/api/agents/wren", config(protected=True))
    assert answer.status_code == 201
    assert answer.json()["protected"] is True
    assert answer.json()["revision"] == 1
    body: dict[str, Any] = answer.json()
    return body


def propose(api: ApiClient, **changes: Any) -> dict[str, Any]:
    before = state()
    answer = api.put("/api/agents/wren", config(protected=True, **changes))
    assert answer.status_code == 202, answer.content
    assert state() == before  # nothing applied
    body: dict[str, Any] = answer.json()
    return body


def test_an_agent_is_unprotected_unless_declared(api: ApiClient) -> None:
    answer = api.put("/api/agents/wren", config())
    assert answer.json()["protected"] is False
    assert api.get("/api/agents/wren").json()["protected"] is False


def test_a_change_to_a_protected_agent_is_proposed_not_applied(
    api: ApiClient, protected: dict[str, Any]
) -> None:
    answer = propose(api, persona="You are Wren, reviewed.")
    assert answer == {
        "status": "proposed",
        "proposal_id": answer["proposal_id"],
        "base_revision": 1,
    }
    read = api.get("/api/agents/wren").json()
    assert read["persona"] == SAMPLE_CONFIG["persona"]
    assert read["revision"] == 1
    proposal = api.get(f"/api/proposals/{answer['proposal_id']}").json()
    assert proposal["agent"] == "wren"
    assert proposal["status"] == "pending"
    assert proposal["base_revision"] == 1
    assert proposal["summary"] == [{"change": "field_changed", "field": "persona"}]
    assert proposal["config"]["persona"] == "You are Wren, reviewed."
    assert proposal["proposed_by"].startswith("token ")
    assert proposal["decided_by"] is None
    assert proposal["decided_at"] is None
    assert proposal["reason"] == ""


def test_a_save_that_changes_nothing_proposes_nothing(
    api: ApiClient, protected: dict[str, Any]
) -> None:
    answer = api.put("/api/agents/wren", config(protected=True))
    assert answer.status_code == 200
    assert answer.json()["revision"] == 1
    assert Proposal.objects.count() == 0


def test_turning_protection_off_is_itself_proposed(
    api: ApiClient, protected: dict[str, Any]
) -> None:
    before = state()
    answer = api.put("/api/agents/wren", config(protected=False))
    assert answer.status_code == 202
    assert state() == before
    summary = api.get(f"/api/proposals/{answer.json()['proposal_id']}").json()["summary"]
    assert summary == [{"change": "field_changed", "field": "protected"}]


def test_turning_protection_on_takes_effect_at_once(api: ApiClient) -> None:
    api.put("/api/agents/wren", config())
    answer = api.put("/api/agents/wren", config(protected=True))
    assert answer.status_code == 200
    assert answer.json()["revision"] == 2
    assert Revision.objects.get(number=2).summary == [
        {"change": "field_changed", "field": "protected"}
    ]


def test_if_revision_is_checked_before_proposing(api: ApiClient, protected: dict[str, Any]) -> None:
    stale = api.put("/api/agents/wren", config(protected=True, persona="x", if_revision=7))
    assert_error(stale, 409, "revision_conflict")
    assert stale.json()["error"]["current_revision"] == 1
    assert Proposal.objects.count() == 0
    ok = api.put("/api/agents/wren", config(protected=True, persona="x", if_revision=1))
    assert ok.status_code == 202


def test_an_invalid_change_to_a_protected_agent_is_refused_not_proposed(
    api: ApiClient, protected: dict[str, Any]
) -> None:
    answer = api.put("/api/agents/wren", config(protected=True, routing_spec="no-such-spec"))
    assert_error(answer, 422, "unknown_routing_spec")
    assert Proposal.objects.count() == 0


def test_a_restore_on_a_protected_agent_is_proposed(api: ApiClient) -> None:
    api.put("/api/agents/wren", config(persona="first"))
    api.put("/api/agents/wren", config(persona="second", protected=True))
    before = state()
    answer = api.post("/api/agents/wren/revisions/1/restore")
    assert answer.status_code == 202
    body = answer.json()
    assert body["status"] == "proposed"
    assert body["base_revision"] == 2
    assert state() == before
    proposal = api.get(f"/api/proposals/{body['proposal_id']}").json()
    # Revision 1's config, protection off included: restoring it turns protection off.
    assert proposal["config"]["persona"] == "first"
    assert proposal["config"]["protected"] is False


def test_proposals_are_listed_newest_first_with_a_status_filter(
    api: ApiClient, protected: dict[str, Any], team: Team, rhea: User
) -> None:
    ids = [propose(api, persona=f"version {n}")["proposal_id"] for n in range(3)]
    reject_proposal(team, ids[0], Actor.for_user(rhea), "not now")
    listing = api.get("/api/agents/wren/proposals").json()
    assert [p["proposal_id"] for p in listing["proposals"]] == ids[::-1]
    assert listing["total"] == 3
    assert listing["next_offset"] is None
    pending = api.get("/api/agents/wren/proposals?status=pending").json()
    assert [p["proposal_id"] for p in pending["proposals"]] == ids[:0:-1]
    page = api.get("/api/agents/wren/proposals?limit=1&offset=1").json()
    assert [p["proposal_id"] for p in page["proposals"]] == [ids[1]]
    assert page["next_offset"] == 2
    rejected = api.get(f"/api/proposals/{ids[0]}").json()
    assert rejected["status"] == "rejected"
    assert rejected["decided_by"] == "rhea"
    assert rejected["reason"] == "not now"
    assert rejected["decided_at"] is not None
    assert_error(api.get("/api/agents/wren/proposals?status=maybe"), 422, "invalid_request")
    # ``limit`` is 1–200, as every list's (SPEC §8).
    everything = api.get("/api/agents/wren/proposals?limit=200")
    assert everything.status_code == 200
    assert (everything.json()["limit"], len(everything.json()["proposals"])) == (200, 3)
    assert_error(api.get("/api/agents/wren/proposals?limit=0"), 422, "invalid_request")
    assert_error(api.get("/api/agents/wren/proposals?limit=201"), 422, "invalid_request")


def test_unknown_and_other_teams_proposals_are_not_found(
    api: ApiClient, other_api: ApiClient, protected: dict[str, Any]
) -> None:
    made = propose(api, persona="x")["proposal_id"]
    assert_error(api.get(f"/api/proposals/{made + 1}"), 404, "proposal_not_found")
    assert_error(other_api.get(f"/api/proposals/{made}"), 404, "proposal_not_found")
    assert_error(other_api.get("/api/agents/wren/proposals"), 404, "agent_not_found")
    assert_error(api.get("/api/proposals/99999999999"), 422, "invalid_request")


def test_a_token_has_no_way_to_publish(api: ApiClient, protected: dict[str, Any]) -> None:
    made = propose(api, persona="x")["proposal_id"]
    for verb in ("publish", "reject"):
        answer = api.post(f"/api/proposals/{made}/{verb}")
        assert answer.status_code in (404, 405)
    assert Proposal.objects.get(pk=made).status == "pending"


# --- deciding (the operations the approvals page calls) -----------------------------


def test_publishing_writes_the_next_revision_attributed_to_both(
    api: ApiClient, protected: dict[str, Any], team: Team, member: User, rhea: User
) -> None:
    answer = api.put("/api/agents/wren", config(protected=True, persona="Reviewed Wren."))
    made = answer.json()["proposal_id"]
    proposal = publish_proposal(team, made, Actor.for_user(rhea))
    assert proposal.status == "published"
    assert proposal.decided_by == "rhea"
    read = api.get("/api/agents/wren").json()
    assert read["persona"] == "Reviewed Wren."
    assert read["revision"] == 2
    revision = api.get("/api/agents/wren/revisions/2").json()
    assert revision["via"] == "proposal"
    assert revision["actor"] == Proposal.objects.get(pk=made).proposed_by
    assert revision["approved_by"] == "rhea"
    assert revision["summary"] == [{"change": "field_changed", "field": "persona"}]


def test_the_proposer_may_not_decide_their_own_proposal(
    protected: dict[str, Any], team: Team, member: User
) -> None:

    stored = store_config(
        team,
        "wren",
        AgentConfig.model_validate(config(protected=True, tone="Terse.")),
        actor=Actor.for_user(member),
        via=Via.ADMIN,
    )
    assert stored.proposal is not None
    assert stored.recorded is None
    made = stored.proposal.pk
    before = state()
    with pytest.raises(OwnProposal):
        publish_proposal(team, made, Actor.for_user(member))
    with pytest.raises(OwnProposal):
        reject_proposal(team, made, Actor.for_user(member))
    assert state() == before
    assert Proposal.objects.get(pk=made).status == "pending"
    withdrawn = withdraw_proposal(team, made, Actor.for_user(member))
    assert withdrawn.status == "withdrawn"


def test_only_the_proposer_withdraws(
    api: ApiClient, protected: dict[str, Any], team: Team, rhea: User
) -> None:
    made = propose(api, persona="x")["proposal_id"]
    with pytest.raises(NotProposer):
        withdraw_proposal(team, made, Actor.for_user(rhea))
    assert Proposal.objects.get(pk=made).status == "pending"


def test_a_decided_proposal_is_decided_once(
    api: ApiClient, protected: dict[str, Any], team: Team, rhea: User, member: User
) -> None:
    made = propose(api, persona="x")["proposal_id"]
    publish_proposal(team, made, Actor.for_user(rhea))
    after = state()
    attempts: list[Callable[[], object]] = [
        lambda: publish_proposal(team, made, Actor.for_user(member)),
        lambda: reject_proposal(team, made, Actor.for_user(member)),
    ]
    for decide in attempts:
        with pytest.raises(ProposalDecided) as raised:
            decide()
        assert raised.value.details == {"status": "published"}
    assert state() == after


def test_a_proposal_on_an_older_revision_goes_stale_and_changes_nothing(
    api: ApiClient, protected: dict[str, Any], team: Team, rhea: User
) -> None:
    first = propose(api, persona="first")["proposal_id"]
    second = propose(api, tone="second")["proposal_id"]
    publish_proposal(team, first, Actor.for_user(rhea))
    # Marked the moment the agent moved on, so the queue never offers it.
    moved = Proposal.objects.get(pk=second)
    assert moved.status == "stale"
    assert moved.reason == "The agent moved to revision 2 before this was published."
    after = state()
    with pytest.raises(ProposalDecided):
        publish_proposal(team, second, Actor.for_user(rhea))
    assert state() == after
    assert api.get("/api/agents/wren").json()["tone"] == SAMPLE_CONFIG["tone"]


def test_a_direct_change_once_protection_is_lifted_leaves_waiting_proposals_stale(
    api: ApiClient, protected: dict[str, Any]
) -> None:
    made = propose(api, persona="proposed")["proposal_id"]
    untouched = propose(api, tone="also proposed")["proposal_id"]
    # Protection lifted on the row alone (the proposals wait on): the next change
    # applies at once, and neither proposal can be published over it.
    Agent.objects.filter(slug="wren").update(protected=False)
    answer = api.put("/api/agents/wren", config(persona="direct"))
    assert answer.status_code == 200
    assert answer.json()["revision"] == 2
    for pk in (made, untouched):
        assert Proposal.objects.get(pk=pk).status == "stale"
    # The next change finds none waiting and marks nothing.
    assert api.put("/api/agents/wren", config(persona="again")).json()["revision"] == 3
    assert Proposal.objects.filter(status="stale").count() == 2


def test_publishing_finds_a_moved_agent_stale_even_if_not_yet_marked(
    api: ApiClient, protected: dict[str, Any], team: Team, rhea: User
) -> None:
    made = propose(api, persona="x")["proposal_id"]
    # A proposal whose base is behind without having been marked (rows from before
    # marking existed, say): publishing checks the base itself.
    Proposal.objects.filter(pk=made).update(base_revision=0)
    before = state()
    proposal = publish_proposal(team, made, Actor.for_user(rhea))
    assert proposal.status == "stale"
    assert proposal.reason == "The agent moved to revision 1 before this was published."
    assert Proposal.objects.get(pk=made).status == "stale"
    assert state() == before


def test_a_published_proposal_whose_spec_is_gone_is_refused_and_left_pending(
    api: ApiClient, protected: dict[str, Any], team: Team, rhea: User
) -> None:
    made = propose(api, persona="x")["proposal_id"]
    proposal = Proposal.objects.get(pk=made)
    data = json.loads(proposal.config.text)
    data["routing_spec"] = "retired-spec"
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    StoredConfig.objects.create(sha256=config_sha256(text), text=text)
    Proposal.objects.filter(pk=made).update(config_id=config_sha256(text))
    before = state()
    with pytest.raises(DomainError) as raised:
        publish_proposal(team, made, Actor.for_user(rhea))
    assert raised.value.code == "unknown_routing_spec"
    assert state() == before
    assert Proposal.objects.get(pk=made).status == "pending"


def test_a_rejection_reason_is_bounded(
    api: ApiClient, protected: dict[str, Any], team: Team, rhea: User
) -> None:
    made = propose(api, persona="x")["proposal_id"]
    with pytest.raises(DomainError) as raised:
        reject_proposal(team, made, Actor.for_user(rhea), "r" * (REASON_MAX + 1))
    assert raised.value.code == "invalid_request"
    assert Proposal.objects.get(pk=made).status == "pending"
    done = reject_proposal(team, made, Actor.for_user(rhea), "é" * REASON_MAX)
    assert done.status == "rejected"
    assert len(done.reason) == REASON_MAX


def test_another_teams_proposal_cannot_be_decided(
    api: ApiClient, protected: dict[str, Any], other_team: Team, rhea: User
) -> None:
    made = propose(api, persona="x")["proposal_id"]
    with pytest.raises(ProposalNotFound):
        publish_proposal(other_team, made, Actor.for_user(rhea))
    assert current_number(Agent.objects.get(slug="wren")) == 1
