"""Four eyes and whose token (SPEC §14): a change made with a person's API token is
proposed by that person, who can never publish or reject it by any path; a service
token's proposals behave as before.

The finding this guards: a reviewer holding a team token proposed ``"protected": false``
through the API, then published it on the page (no person was the token's proposer), and
from then on wrote to the agent directly with the token.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db.models import ProtectedError
from django.test import Client

from lens.actors import Actor
from lens.models import Agent, ApiToken, AuditEvent, Membership, Proposal, Revision, Team
from lens.proposals import OwnProposal, TokenDecides, reject_proposal, withdraw_proposal
from lens.token_issuing import Issued, NotAMember, issue_token
from memory.configuring import publish_proposal
from tests.api_calls import ApiClient
from tests.factories import logged_in, post_proposal
from tests.pages import dom
from tests.samples import SAMPLE_CONFIG

pytestmark = pytest.mark.django_db


def config(**changes: Any) -> dict[str, Any]:
    return {**json.loads(json.dumps(SAMPLE_CONFIG)), **changes}


def state() -> tuple[Any, ...]:
    """What a refused decision must leave as it was: the agent and its revisions."""
    agent = Agent.objects.get(slug="wren")
    return (
        list(Revision.objects.order_by("pk").values_list("pk", "number", "config_id")),
        (agent.name, agent.persona, agent.protected),
        AuditEvent.objects.count(),
    )


@pytest.fixture
def laptop(team: Team, reviewer: User) -> Issued:
    """mira (a reviewer of acme) holds a token of her own."""
    return issue_token(team, "laptop", user=reviewer)


@pytest.fixture
def mira_api(laptop: Issued) -> ApiClient:
    return ApiClient(laptop.raw)


@pytest.fixture
def protected_wren(api: ApiClient) -> None:
    assert api.put("/api/agents/wren", config(protected=True)).status_code == 201


@pytest.fixture
def unprotecting(mira_api: ApiClient, protected_wren: None) -> Proposal:
    """mira, with her token, proposes turning protection off."""
    answer = mira_api.put("/api/agents/wren", config(protected=False))
    assert answer.status_code == 202, answer.content
    return Proposal.objects.get(pk=answer.json()["proposal_id"])


def assert_pending(proposal: Proposal) -> None:
    proposal.refresh_from_db()
    assert (proposal.status, proposal.decided_by, proposal.decided_at) == ("pending", None, None)


def test_a_proposal_made_with_a_person_s_token_is_theirs(
    unprotecting: Proposal, reviewer: User, laptop: Issued, mira_api: ApiClient
) -> None:
    assert unprotecting.proposer == reviewer
    assert unprotecting.token == laptop.token
    assert unprotecting.proposed_by == "mira"
    read = mira_api.get(f"/api/proposals/{unprotecting.pk}").json()
    assert read["proposed_by"] == "mira"
    created = AuditEvent.objects.get(action="proposal.created")
    assert created.actor == "mira"


@pytest.mark.parametrize("action", ["publish", "reject"])
@pytest.mark.parametrize("htmx", [False, True], ids=["page", "queue"])
def test_the_proposer_cannot_decide_it_on_the_page_or_by_a_forged_post(
    unprotecting: Proposal, reviewer_client: Client, action: str, htmx: bool
) -> None:
    before = state()
    response = post_proposal(reviewer_client, unprotecting.pk, action, htmx=htmx, back="queue")
    assert response.status_code == 403
    assert state() == before
    assert_pending(unprotecting)
    assert Agent.objects.get(slug="wren").protected is True


def test_the_page_shows_the_proposer_why_the_buttons_are_absent_and_whose_token(
    unprotecting: Proposal, reviewer_client: Client, laptop: Issued
) -> None:
    page = dom(reviewer_client.get(f"/proposals/{unprotecting.pk}/"))
    assert page.all("data-action", "publish") == []
    assert page.all("data-action", "reject") == []
    assert "You proposed this change" in page.one("data-why-no-buttons").squashed
    fact = page.one("data-fact", "proposed-by").squashed
    assert fact.startswith(f"mira with token {laptop.token.prefix}… (laptop)")


def test_the_proposer_cannot_decide_it_through_the_operations(
    unprotecting: Proposal, team: Team, reviewer: User, laptop: Issued
) -> None:
    """What every path calls (the pages, the queue, and anything added later): the
    check lives in the operation, so no path can skip it."""
    before = state()
    for actor in (Actor.for_user(reviewer), Actor.for_token(laptop.token)):
        expected = OwnProposal if actor.token is None else TokenDecides
        with pytest.raises(expected):
            publish_proposal(team, unprotecting.pk, actor)
        with pytest.raises(expected):
            reject_proposal(team, unprotecting.pk, actor, "no")
    assert state() == before
    assert_pending(unprotecting)


def test_no_token_decides_a_proposal_not_even_another_person_s(
    unprotecting: Proposal, team: Team, rhea: User
) -> None:
    theirs = issue_token(team, "desk", user=rhea).token
    service = ApiToken.objects.get(user=None)
    for token in (theirs, service):
        with pytest.raises(TokenDecides):
            publish_proposal(team, unprotecting.pk, Actor.for_token(token))
    assert_pending(unprotecting)


def test_no_other_path_decides_it(
    unprotecting: Proposal, reviewer_client: Client, root: User
) -> None:
    before = state()
    # The queue's bulk form decides memories only: a proposal's id is not one.
    bulk = reviewer_client.post(
        "/approvals/bulk/",
        {"team": "acme", "decision": "approve", "selected": [str(unprotecting.pk)]},
    )
    assert bulk.status_code in (302, 400)
    # The admin offers no proposals to edit, nor any action that decides them.
    admin = logged_in(root)
    assert admin.get("/admin/lens/proposal/").status_code == 404
    assert admin.get(f"/admin/lens/proposal/{unprotecting.pk}/change/").status_code == 404
    assert state() == before
    assert_pending(unprotecting)


def test_the_token_keeps_proposing_and_never_writes_directly(
    unprotecting: Proposal, mira_api: ApiClient
) -> None:
    answer = mira_api.put("/api/agents/wren", config(protected=True, persona="Mine now."))
    assert answer.status_code == 202
    assert mira_api.get("/api/agents/wren").json()["persona"] == SAMPLE_CONFIG["persona"]


def test_restore_and_reorder_with_her_token_are_proposed_by_her_too(
    protected_wren: None, mira_api: ApiClient, api: ApiClient, team: Team, reviewer: User
) -> None:
    # Revision 2 (a different persona) through another reviewer's publish, then mira's
    # token asks to restore revision 1: proposed by her.
    made = api.put("/api/agents/wren", config(protected=True, persona="Two.")).json()
    publish_proposal(team, made["proposal_id"], Actor.for_user(reviewer))
    restored = mira_api.post("/api/agents/wren/revisions/1/restore", {})
    assert restored.status_code == 202, restored.content
    proposal = Proposal.objects.get(pk=restored.json()["proposal_id"])
    assert (proposal.proposer, proposal.via) == (reviewer, "restore")
    with pytest.raises(OwnProposal):
        publish_proposal(team, proposal.pk, Actor.for_user(reviewer))
    assert_pending(proposal)


def test_another_reviewer_publishes_it(
    unprotecting: Proposal, rhea: User, mira_api: ApiClient, laptop: Issued
) -> None:
    response = post_proposal(logged_in(rhea), unprotecting.pk, "publish")
    assert response.status_code == 302
    unprotecting.refresh_from_db()
    assert (unprotecting.status, unprotecting.decided_by) == ("published", "rhea")
    revision = Revision.objects.get(agent__slug="wren", number=2)
    assert (revision.via, revision.actor, revision.approved_by) == ("proposal", "mira", "rhea")
    # Unprotected now, by a second person's decision: her token writes directly.
    assert mira_api.put("/api/agents/wren", config(persona="Mine.")).status_code == 200


def test_the_proposer_withdraws_it(unprotecting: Proposal, team: Team, reviewer: User) -> None:
    assert withdraw_proposal(team, unprotecting.pk, Actor.for_user(reviewer)).status == "withdrawn"


# --- service tokens, as before ---------------------------------------------------------


def test_a_service_token_s_proposal_is_nobody_s_and_any_reviewer_decides_it(
    api: ApiClient, protected_wren: None, reviewer_client: Client
) -> None:
    answer = api.put("/api/agents/wren", config(protected=False))
    assert answer.status_code == 202
    proposal = Proposal.objects.get(pk=answer.json()["proposal_id"])
    service = ApiToken.objects.get(user=None)
    assert proposal.proposer is None
    assert proposal.token == service
    assert proposal.proposed_by == f"token {service.prefix}…"
    page = dom(reviewer_client.get(f"/proposals/{proposal.pk}/"))
    assert page.all("data-proposal-token") == []  # its proposer names the token already
    assert post_proposal(reviewer_client, proposal.pk, "publish").status_code == 302
    proposal.refresh_from_db()
    assert proposal.status == "published"


# --- a person's token lives as long as the person may act ------------------------------


def test_a_deactivated_person_s_token_is_refused(reviewer: User, mira_api: ApiClient) -> None:
    assert mira_api.get("/api/agents").status_code == 200
    reviewer.is_active = False
    reviewer.save()
    assert mira_api.get("/api/agents").status_code == 401
    assert mira_api.put("/api/kv/notes.a", {"payload": "x"}).status_code == 401
    assert mira_api.get("/api/kv/notes.a").status_code == 401


def test_leaving_the_team_revokes_the_person_s_tokens_there(
    team: Team, reviewer: User, laptop: Issued, mira_api: ApiClient
) -> None:
    Membership.objects.get(team=team, user=reviewer).delete()
    assert mira_api.get("/api/agents").status_code == 401
    laptop.token.refresh_from_db()
    assert laptop.token.revoked_at is not None
    actions = list(AuditEvent.objects.order_by("seq").values_list("action", flat=True))
    assert actions[-2:] == ["member.removed", "token.revoked"]


def test_a_person_s_token_is_for_a_team_they_belong_to(other_team: Team, reviewer: User) -> None:
    with pytest.raises(NotAMember):
        issue_token(other_team, "x", user=reviewer)
    assert not ApiToken.objects.filter(user=reviewer).exists()


def test_writes_with_a_person_s_token_are_theirs(mira_api: ApiClient, laptop: Issued) -> None:
    """The token's lookup (``lens.api_tokens``, plain SQL joined into the key/value writes)
    carries its person: what they write is attributed to them."""
    assert mira_api.put("/api/kv/notes.a", {"payload": "x"}).status_code == 201
    assert mira_api.get("/api/kv/notes.a").status_code == 200
    assert AuditEvent.objects.get(action="kv.written").actor == "mira"


def test_deleting_a_team_takes_its_people_s_tokens_with_it(
    team: Team, reviewer: User, laptop: Issued, mira_api: ApiClient
) -> None:
    team.delete()
    assert not ApiToken.objects.exists()
    assert not AuditEvent.objects.filter(team_id=laptop.token.team_id).exists()
    assert mira_api.get("/api/agents").status_code == 401


def test_a_person_holding_tokens_is_deactivated_not_deleted(reviewer: User, laptop: Issued) -> None:
    """Deleting them would leave their token without a person: a service token, whose
    proposals they could then decide. The database refuses; nothing changes."""
    with pytest.raises(ProtectedError):
        reviewer.delete()
    assert User.objects.filter(pk=reviewer.pk).exists()
    laptop.token.refresh_from_db()
    assert laptop.token.user_id == reviewer.pk
