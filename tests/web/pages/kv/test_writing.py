"""The key/value store's pages, writing: edits with compare-and-swap and deletion at
``/kv/<key>/`` (SPEC §7, §9).
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from kvstore import store
from kvstore.core.keys import PAYLOAD_MAX_RUNES
from kvstore.models import Key
from lens.models import Team
from tests.factories import kv_page_url, post_delete, post_write, versions_of
from tests.kvstore.diff_rows import diff_rows
from tests.pages import (
    alert_text,
    dom,
    draft,
    hidden_if_version,
    keys_listed,
    shown_payload,
)

pytestmark = pytest.mark.django_db


# --- writing -----------------------------------------------------------------------


def test_saving_from_the_latest_version_writes_the_next_one(
    team: Team, member_client: Client
) -> None:
    store.write(team, "root", "first")
    # Browsers submit a textarea's line breaks as CRLF.
    response = post_write(member_client, "root", "second\r\nwith two lines\r\n", 1)
    assert response.status_code == 302
    assert response["Location"] == kv_page_url("root") + "?team=acme"
    assert versions_of(team, "root") == [(1, "first"), (2, "second\nwith two lines\n")]
    page = dom(member_client.get(response["Location"]))
    assert "Saved version 2." in alert_text(page)
    assert shown_payload(page) == "second\nwith two lines\n"
    assert hidden_if_version(page) == "2"
    # An emptied payload is a version like any other.
    assert post_write(member_client, "root", "", 2).status_code == 302
    assert versions_of(team, "root")[-1] == (3, "")


def test_a_stale_edit_is_a_conflict_that_names_the_newer_version(
    team: Team, member_client: Client
) -> None:
    store.write(team, "root", "first")
    store.write(team, "root", "second, by someone else")
    store.write(team, "root", "third, by someone else")
    mine = "my edit of <first> & more\nline two"
    response = post_write(member_client, "root", mine, 1)
    page = dom(response, status=409)
    error = page.one("data-write-error").squashed
    assert "version 3" in error
    assert "v3" in error
    # The user's text is kept, the diff from v3 to it is shown, and nothing was written.
    assert draft(page) == mine
    conflict = diff_rows(page.one("data-conflict-diff"))
    assert conflict == ["-third, by someone else", "+my edit of <first> & more", "+line two"]
    assert "v3 → your edit" in page.one("data-conflict-diff").squashed
    assert versions_of(team, "root") == [
        (1, "first"),
        (2, "second, by someone else"),
        (3, "third, by someone else"),
    ]
    # The page shows the stored latest, not the user's text.
    assert shown_payload(page) == "third, by someone else"
    # Saving again is a deliberate write over v3.
    assert hidden_if_version(page) == "3"
    assert post_write(member_client, "root", mine, hidden_if_version(page)).status_code == 302
    assert versions_of(team, "root")[-1] == (4, mine)


def test_saving_from_an_old_version_conflicts_with_the_latest(
    team: Team, member_client: Client
) -> None:
    store.write(team, "root", "first")
    store.write(team, "root", "second")
    page = dom(member_client.get(kv_page_url("root") + "?version=1"))
    response = post_write(member_client, "root", draft(page) + " again", hidden_if_version(page))
    assert response.status_code == 409
    assert "version 2" in dom(response, status=409).one("data-write-error").squashed
    assert len(versions_of(team, "root")) == 2


def test_a_payload_over_the_limit_is_refused_with_the_limit_and_the_count(
    team: Team, member_client: Client
) -> None:
    store.write(team, "root", "first")
    too_big = "\U0001f600" * (PAYLOAD_MAX_RUNES + 1)  # code points, not bytes
    response = post_write(member_client, "root", too_big, 1)
    page = dom(response, status=413)
    error = page.one("data-write-error").squashed.replace(",", "")
    assert str(PAYLOAD_MAX_RUNES) in error
    assert str(PAYLOAD_MAX_RUNES + 1) in error
    assert draft(page) == too_big
    assert hidden_if_version(page) == "1"
    assert versions_of(team, "root") == [(1, "first")]
    # Exactly at the limit is fine.
    at_limit = "\U0001f600" * PAYLOAD_MAX_RUNES
    assert post_write(member_client, "root", at_limit, 1).status_code == 302
    assert versions_of(team, "root")[-1] == (2, at_limit)


def test_an_unknown_action_is_refused(team: Team, member_client: Client) -> None:
    store.write(team, "root", "first")
    assert member_client.post(kv_page_url("root"), {"payload": "x"}).status_code == 400
    assert member_client.post(kv_page_url("root"), {"action": "nuke"}).status_code == 400
    assert member_client.put(kv_page_url("root")).status_code == 405
    assert versions_of(team, "root") == [(1, "first")]


def test_posts_need_the_csrf_token(team: Team, member: User) -> None:
    store.write(team, "root", "first")
    client = Client(enforce_csrf_checks=True)
    client.force_login(member)
    assert post_write(client, "root", "forged", 1).status_code == 403
    assert post_delete(client, "root", "root").status_code == 403
    assert versions_of(team, "root") == [(1, "first")]

    # The forms carry the token, and with it the same posts work.
    page = dom(client.get(kv_page_url("root")))
    tokens = {e.get("value") for e in page.all("name", "csrfmiddlewaretoken", tag="input")}
    assert len(tokens) >= 1
    token = str(tokens.pop())
    data = {
        "action": "write",
        "payload": "real",
        "if_version": "1",
        "csrfmiddlewaretoken": token,
        "team": "acme",
    }
    assert client.post(kv_page_url("root"), data).status_code == 302
    assert versions_of(team, "root")[-1] == (2, "real")


# --- deleting ----------------------------------------------------------------------


@pytest.mark.parametrize("confirm", [None, "", "ROOT.x", "root.x ", " root.x", "root", "x"])
def test_deleting_needs_the_key_typed_exactly(
    team: Team, member_client: Client, confirm: str | None
) -> None:
    store.write(team, "root.x", "first")
    store.write(team, "root.x", "second")
    response = post_delete(member_client, "root.x", confirm)
    assert response.status_code == 302
    assert response["Location"] == kv_page_url("root.x") + "?team=acme"
    assert len(versions_of(team, "root.x")) == 2
    page = dom(member_client.get(response["Location"]))
    assert "Type the key's name to confirm" in alert_text(page)
    assert shown_payload(page) == "second"


def test_deleting_with_the_key_typed_removes_every_version(
    team: Team, member_client: Client
) -> None:
    store.write(team, "must.gone", "first")
    store.write(team, "must.gone", "second")
    store.write(team, "must.kept", "kept")
    page = dom(member_client.get(kv_page_url("must.gone")))
    assert "Deletes all 2 versions" in page.one("for", "confirm", tag="label").squashed
    response = post_delete(member_client, "must.gone", "must.gone")
    assert response.status_code == 302
    assert response["Location"] == "/kv/?team=acme"
    assert not Key.objects.filter(team=team, key="must.gone").exists()
    assert versions_of(team, "must.gone") == []
    listing = dom(member_client.get("/kv/"))
    assert "Deleted must.gone and its 2 versions." in alert_text(listing)
    assert keys_listed(listing) == ["must.kept"]
    assert member_client.get(kv_page_url("must.gone")).status_code == 404
    # A later write starts again at version 1.
    assert store.write(team, "must.gone", "again").version == 1
