"""Publishing a proposed change is never one key or one click: a post without its
confirmation shows what publishing does and the form that confirms it, and changes
nothing (the queue's dialog sends the confirmation; without JavaScript this page asks).
The queue's Approvals badge counts proposals with the memories."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from lens.actors import Actor
from lens.models import Agent, Proposal, ProposalStatus, Team
from lens.proposals import reject_proposal
from tests.factories import grant, logged_in, make_user, post_proposal, preference
from tests.pages import alert_text, approval_queue, buttons, dom, inside
from tests.web.pages.proposals.test_deciding import assert_unchanged, status_of

pytestmark = pytest.mark.django_db


def test_a_publish_without_its_confirmation_shows_the_confirmation_and_changes_nothing(
    reviewer_client: Client, wren: Agent, proposal: Proposal
) -> None:
    response = post_proposal(
        reviewer_client, proposal.pk, "publish", confirm="", back="queue", agent="wren"
    )
    page = dom(response)
    assert_unchanged(wren, proposal)
    heading = [e for e in page.elements if e.tag == "h1"][0]
    assert heading.squashed == f"Publish proposal {proposal.pk} for Wren?"
    head = heading.ancestor("div")
    assert head is not None
    assert "makes it Wren's revision 2" in head.squashed
    assert page.one("data-publish-confirm", str(proposal.pk))
    assert "Section User Preferences (user_preferences) removed" in (
        page.one("data-words").squashed
    )
    form = page.one("class", "card publish-confirm-form", tag="form")
    assert form.get("action") == f"/proposals/{proposal.pk}/publish/"
    fields = {e.get("name") or "": e.get("value") or "" for e in inside(form, "input")}
    assert fields["confirm"] == "yes"
    assert (fields["team"], fields["back"], fields["agent"]) == ("acme", "queue", "wren")
    assert buttons(form) == ["Publish as revision 2"]
    cancel = [a for a in inside(form, "a") if a.squashed == "Cancel"][0]
    assert cancel.get("href") == "/approvals/?team=acme&agent=wren"

    # Its form publishes, and comes back to the queue.
    done = post_proposal(
        reviewer_client,
        proposal.pk,
        "publish",
        confirm=fields["confirm"],
        back=fields["back"],
        agent=fields["agent"],
    )
    assert done.status_code == 302
    assert done["Location"] == "/approvals/?team=acme&agent=wren"
    assert status_of(proposal) == ProposalStatus.PUBLISHED


def test_any_other_confirmation_value_publishes_nothing(
    reviewer_client: Client, wren: Agent, proposal: Proposal
) -> None:
    for value in ("", "on", "YES", "1"):
        assert (
            post_proposal(reviewer_client, proposal.pk, "publish", confirm=value).status_code == 200
        )
    assert_unchanged(wren, proposal)


def test_an_unconfirmed_publish_from_the_queue_s_script_is_a_400_that_changes_nothing(
    reviewer_client: Client, wren: Agent, proposal: Proposal
) -> None:
    response = post_proposal(reviewer_client, proposal.pk, "publish", htmx=True, confirm="")
    assert response.status_code == 400
    assert "needs its confirmation" in response.content.decode()
    assert_unchanged(wren, proposal)


def test_the_confirmation_is_only_for_who_may_publish(
    rhea_client: Client, viewer_client: Client, stranger: User, wren: Agent, proposal: Proposal
) -> None:
    # The proposer and a member without the role: 403, as for the publish itself.
    assert post_proposal(rhea_client, proposal.pk, "publish", confirm="").status_code == 403
    assert post_proposal(viewer_client, proposal.pk, "publish", confirm="").status_code == 403
    # Someone outside the team: not found.
    outsider = logged_in(grant(stranger))
    response = post_proposal(outsider, proposal.pk, "publish", confirm="", team="globex")
    assert response.status_code == 404
    # Anonymous: to the login page.
    response = post_proposal(Client(), proposal.pk, "publish", confirm="")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")
    assert_unchanged(wren, proposal)


def test_the_queue_s_row_asks_before_publishing(
    reviewer_client: Client, wren: Agent, proposal: Proposal
) -> None:
    row = approval_queue(reviewer_client).one("data-proposal-id", str(proposal.pk), tag="li")
    forms = inside(row, "form")
    # The row's Publish posts no confirmation (so, without JavaScript, it asks on a page);
    # only the dialog's form carries it.
    row_publish = [f for f in forms if f.get("class") == "publish-form"][0]
    assert "hx-post" not in row_publish.attrs
    assert "confirm" not in [e.get("name") for e in inside(row_publish, "input")]
    dialog = inside(row, "dialog")[0]
    assert "data-publish-dialog" in dialog.attrs
    assert "open" not in dialog.attrs
    confirm = inside(dialog, "form")[0]
    assert {e.get("name"): e.get("value") for e in inside(confirm, "input")}["confirm"] == "yes"
    assert [("autofocus" in b.attrs) for b in inside(confirm, "button")] == [False, True]


def test_the_badge_counts_proposals_with_memories(
    reviewer_client: Client, viewer_client: Client, wren: Agent, proposal: Proposal
) -> None:
    # memories: the drink memory is decided; "name" is a profile (auto). One proposal waits.
    preference(wren, "Short answers.", label="answers")
    for client in (reviewer_client, viewer_client):
        for path in ("/approvals/", "/", f"/proposals/{proposal.pk}/"):
            counter = dom(client.get(path)).one("id", "pending-count")
            assert counter.get("data-pending-total") == "2", path
    # A decision's htmx answer refreshes it out of band.
    response = post_proposal(reviewer_client, proposal.pk, "reject", htmx=True)
    assert 'id="pending-count"' in response.content.decode()
    assert 'data-pending-total="1"' in response.content.decode()


def test_the_bar_says_how_many_are_selected(
    reviewer_client: Client, wren: Agent, proposal: Proposal
) -> None:
    for n in range(3):
        preference(wren, f"Answer {n}.", label=f"a{n}")
    assert approval_queue(reviewer_client).one("data-selected-count").squashed == "0 selected"
    page = approval_queue(reviewer_client, "?select=all")
    count = page.one("data-selected-count")
    assert (count.squashed, count.get("data-selected-count")) == ("3 selected", "3")
    # The bar follows the list (it sticks to the window's bottom as the list scrolls).
    order = [e for e in page.elements if e.get("id") == "bulk" or "data-promotion-id" in e.attrs]
    assert order[-1].get("id") == "bulk"


def test_a_proposal_decided_meanwhile_says_so_instead_of_asking(
    reviewer_client: Client, team: Team, wren: Agent, proposal: Proposal
) -> None:
    tess = grant(make_user("tess", team))
    reject_proposal(team, proposal.pk, Actor.for_user(tess), "No.")
    response = post_proposal(reviewer_client, proposal.pk, "publish", confirm="")
    assert response.status_code == 302
    said = alert_text(dom(reviewer_client.get(response["Location"])))
    assert f"Proposal {proposal.pk} was already rejected" in said
    assert status_of(proposal) == ProposalStatus.REJECTED
