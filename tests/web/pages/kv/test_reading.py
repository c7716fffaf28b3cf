"""The key/value store's pages, reading: who sees what, keys by prefix at ``/kv/``, one
key's value, history and diffs at ``/kv/<key>/``, big payloads and query counts (SPEC §7, §9).
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import pytest
from django.test import Client

from kvstore import store
from kvstore.models import Key
from lens.models import Team
from tests.factories import (
    HTMX,
    kv_page_url,
    make_user,
    post_delete,
    post_write,
    versions_of,
    write_versions,
)
from tests.kvstore.diff_rows import diff_rows, marked_words
from tests.pages import (
    Element,
    alert_text,
    dom,
    draft,
    hidden_if_version,
    keys_listed,
    shown_payload,
    versions_listed,
)

pytestmark = pytest.mark.django_db


def login_redirect(response: Any, path: str) -> None:
    assert response.status_code == 302
    target = urlsplit(response["Location"])
    assert target.path == "/accounts/login/"
    assert parse_qs(target.query)["next"] == [path]


# --- who sees what -----------------------------------------------------------------


def test_a_member_sees_the_list_and_a_key(team: Team, member_client: Client) -> None:
    store.write(team, "root", "Start here.")
    listing = dom(member_client.get("/kv/"))
    assert keys_listed(listing) == ["root"]
    assert listing.one("href", "/kv/root/", tag="a").squashed == "root"
    detail = dom(member_client.get(kv_page_url("root")))
    assert shown_payload(detail) == "Start here."


def test_anonymous_visitors_are_sent_to_log_in_and_change_nothing(team: Team) -> None:
    store.write(team, "root", "Start here.")
    anonymous = Client()
    login_redirect(anonymous.get("/kv/"), "/kv/")
    login_redirect(anonymous.get("/kv/?prefix=ro"), "/kv/?prefix=ro")
    login_redirect(anonymous.get(kv_page_url("root")), kv_page_url("root"))
    login_redirect(anonymous.get(kv_page_url("nothing.here")), kv_page_url("nothing.here"))
    login_redirect(post_write(anonymous, "root", "Defaced.", 1), kv_page_url("root"))
    login_redirect(post_write(anonymous, "fresh", "New.", None), kv_page_url("fresh"))
    login_redirect(post_delete(anonymous, "root", "root"), kv_page_url("root"))
    assert versions_of(team, "root") == [(1, "Start here.")]
    assert not Key.objects.filter(key="fresh").exists()


def test_another_teams_keys_are_invisible_and_untouchable(
    team: Team, other_team: Team, member_client: Client, stranger_client: Client
) -> None:
    store.write(team, "must.ours", "Ours.")
    store.write(team, "root", "Our root.")
    store.write(other_team, "must.theirs", "Theirs.")
    store.write(other_team, "root", "Their root.")

    # The stranger sees only globex's keys, whatever the prefix.
    assert keys_listed(dom(stranger_client.get("/kv/"))) == ["must.theirs", "root"]
    assert keys_listed(dom(stranger_client.get("/kv/?prefix=must."))) == ["must.theirs"]
    assert keys_listed(dom(stranger_client.get("/kv/?prefix=must.o"))) == []
    assert keys_listed(dom(stranger_client.get("/kv/?prefix=must.", headers=HTMX))) == [
        "must.theirs"
    ]
    # Our key, by name: as if it did not exist.
    for path in (
        kv_page_url("must.ours"),
        kv_page_url("must.ours") + "?version=1",
        kv_page_url("must.ours") + "?from=1&to=1",
    ):
        assert stranger_client.get(path).status_code == 404
    # Their forms carry their own team, where our key does not exist.
    own = {"team": "globex"}
    assert post_write(stranger_client, "must.ours", "Overwritten.", 1, **own).status_code == 404
    assert post_write(stranger_client, "must.ours", "Overwritten.", None, **own).status_code == 404
    assert post_delete(stranger_client, "must.ours", "must.ours", **own).status_code == 404
    # A form naming acme, which they do not belong to, is refused.
    assert post_write(stranger_client, "must.ours", "Overwritten.", 1).status_code == 400
    assert post_delete(stranger_client, "must.ours", "must.ours").status_code == 400
    # A key both teams have is each team's own.
    assert shown_payload(dom(stranger_client.get(kv_page_url("root")))) == "Their root."
    assert shown_payload(dom(member_client.get(kv_page_url("root")))) == "Our root."
    assert post_write(stranger_client, "root", "Their v2.", 1, **own).status_code == 302
    assert versions_of(team, "root") == [(1, "Our root.")]
    assert versions_of(team, "must.ours") == [(1, "Ours.")]
    # And the member cannot reach globex by asking for it.
    assert member_client.get("/kv/?team=globex").status_code == 404
    assert member_client.get(kv_page_url("must.theirs") + "?team=globex").status_code == 404
    assert member_client.get(kv_page_url("must.theirs")).status_code == 404
    assert keys_listed(dom(member_client.get("/kv/"))) == ["must.ours", "root"]


def test_a_user_in_no_team_sees_no_key(team: Team) -> None:
    store.write(team, "root", "Start here.")
    client = Client()
    client.force_login(make_user("loner"))
    listing = client.get("/kv/")
    assert listing.status_code == 200  # how to join a team, never another team's keys
    assert "root" not in keys_listed(dom(listing))
    assert client.get(kv_page_url("root")).status_code == 404
    assert post_delete(client, "root", "root").status_code == 404
    assert versions_of(team, "root") == [(1, "Start here.")]


def test_a_missing_or_invalid_key_is_404(team: Team, member_client: Client) -> None:
    store.write(team, "root", "Start here.")
    for key in ("nope", "root.child", "a..b", ".root", "white%20space", "x" * 257):
        assert member_client.get(kv_page_url(key)).status_code == 404, key
    assert post_write(member_client, "nope", "New.", 0).status_code == 404
    assert not Key.objects.filter(key="nope").exists()


# --- the list ----------------------------------------------------------------------


def test_a_prefix_lists_only_its_namespace_in_code_point_order(
    team: Team, member_client: Client
) -> None:
    keys = [
        "must.craft.traps",
        "must.craft",
        "must.crafty",
        "must.Zeta",
        "must.alpha",
        "must._under",
        "must.-dash",
        "must.9",
        "must.:colon",
        "must.B",
        "mustard",
        "must_x",
        "must",
        "ref.must.x",
        "root",
        "Must.upper",
    ]
    for key in keys:
        store.write(team, key, f"payload of {key}")
    in_namespace = sorted(k for k in keys if k.startswith("must."))
    assert in_namespace[:4] == ["must.-dash", "must.9", "must.:colon", "must.B"]

    page = dom(member_client.get("/kv/?prefix=must."))
    assert keys_listed(page) == in_namespace
    # The box shows the prefix that was asked for.
    assert page.one("name", "prefix", tag="input").get("value") == "must."
    # A plain string prefix: "must.craft" also matches "must.crafty".
    assert keys_listed(dom(member_client.get("/kv/?prefix=must.craft"))) == [
        "must.craft",
        "must.craft.traps",
        "must.crafty",
    ]
    # "_" is a literal character, never a wildcard.
    assert keys_listed(dom(member_client.get("/kv/?prefix=must_"))) == ["must_x"]
    assert keys_listed(dom(member_client.get("/kv/?prefix=must.:"))) == ["must.:colon"]
    # No prefix: every key, in code-point order.
    assert keys_listed(dom(member_client.get("/kv/"))) == sorted(keys)
    empty = dom(member_client.get("/kv/?prefix=nothing."))
    assert keys_listed(empty) == []
    assert "No keys starting with nothing." in empty.one("id", "kv-results").squashed


def test_each_row_shows_the_latest_version_size_and_time(team: Team, member_client: Client) -> None:
    write_versions(team, "must.a", "one", "two!")
    written = store.write(team, "must.a", "three \U0001f600")
    page = dom(member_client.get("/kv/?prefix=must."))
    row = page.one("data-kv-key", "must.a")
    assert "v3" in row.squashed
    assert "7 chars" in row.squashed  # code points: the emoji is one
    times = [e for e in page.elements if e.tag == "time" and e in _descendants(row)]
    assert len(times) == 1
    assert datetime.fromisoformat(str(times[0].get("datetime"))) == written.written_at


def _descendants(element: Element) -> list[Element]:
    found: list[Element] = []
    for child in element.children:
        found.append(child)
        found.extend(_descendants(child))
    return found


def test_the_list_pages_by_50_and_its_links_keep_the_prefix(
    team: Team, member_client: Client
) -> None:
    keys = [f"must.k{i:03d}" for i in range(120)]
    for key in reversed(keys):
        store.write(team, key, key)
    for key in ("mustard", "ref.a", "root"):
        store.write(team, key, key)

    seen: list[str] = []
    path = "/kv/?prefix=must."
    pages = 0
    while True:
        page = dom(member_client.get(path))
        pages += 1
        rows = keys_listed(page)
        assert len(rows) == (50 if pages < 3 else 20)
        seen.extend(rows)
        assert f"Page {pages} of 3" in page.one("id", "kv-results").squashed
        nexts = page.links("Next")
        if not nexts:
            break
        assert len(nexts) == 1
        query = parse_qs(urlsplit(nexts[0]).query)
        assert query == {"prefix": ["must."], "page": [str(pages + 1)]}
        path = urljoin(path, nexts[0])
    assert pages == 3
    assert seen == keys
    # And back: "Previous" keeps the prefix too.
    previous = page.links("Previous")
    assert len(previous) == 1
    assert parse_qs(urlsplit(previous[0]).query) == {"prefix": ["must."], "page": ["2"]}
    assert keys_listed(dom(member_client.get(urljoin(path, previous[0])))) == keys[50:100]


def test_an_htmx_request_gets_only_the_results(team: Team, member_client: Client) -> None:
    for key in ("must.a", "must.b", "ref.a", "root"):
        store.write(team, key, key)
    response = member_client.get("/kv/?prefix=must.", headers=HTMX)
    assert response.status_code == 200
    html = response.content.decode()
    assert "<html" not in html.lower()
    assert "<body" not in html.lower()
    assert 'name="prefix"' not in html
    page = dom(response)
    assert page.elements[0].get("id") == "kv-results"
    assert [e.get("id") for e in page.elements if e.get("id") == "kv-results"] == ["kv-results"]
    assert keys_listed(page) == ["must.a", "must.b"]
    # Without the header, the same address is the whole page.
    full = member_client.get("/kv/?prefix=must.")
    assert "<html" in full.content.decode()
    assert keys_listed(dom(full)) == ["must.a", "must.b"]


def test_htmx_restoring_history_gets_the_whole_page(team: Team, member_client: Client) -> None:
    """The prefix box pushes its URL; when the user goes back to it and htmx has no
    snapshot, htmx asks for the page with both headers and swaps the answer into <body>:
    a bare fragment there would lose the header and the prefix box.
    """
    store.write(team, "must.a", "a")
    response = member_client.get(
        "/kv/?prefix=must.", headers={**HTMX, "HX-History-Restore-Request": "true"}
    )
    page = dom(response)
    assert "<html" in response.content.decode()
    assert page.one("name", "prefix", tag="input").get("value") == "must."
    assert keys_listed(page) == ["must.a"]


def test_the_list_varies_on_the_htmx_header(team: Team, member_client: Client) -> None:
    """The same URL answers a fragment or a page depending on HX-Request, so caches (the
    browser's back button included) must key on it.
    """
    response = member_client.get("/kv/?prefix=must.", headers=HTMX)
    assert "hx-request" in response.get("Vary", "").lower()
    response = member_client.get("/kv/?prefix=must.")
    assert "hx-request" in response.get("Vary", "").lower()


# --- one key -----------------------------------------------------------------------

TRICKY = (
    "\n\nLeading blank lines, then <b>markup</b> & &amp; entities &lt;kept&gt;.\n"
    "\tTabs,  double  spaces, trailing spaces   \n"
    "CRLF line\r\nand a lone CR\rhere\n"
    "Quotes \"double\" 'single' \u2014 caf\u00e9 \U0001f600 {{ not_a_template }} {% nope %}\n"
    "</pre><script>alert(1)</script>\n\n"
)


def test_the_detail_page_shows_the_latest_payload_exactly(
    team: Team, member_client: Client
) -> None:
    write_versions(team, "must.craft.traps", "old", TRICKY)
    response = member_client.get(kv_page_url("must.craft.traps"))
    assert "<script>alert(1)</script>" not in response.content.decode()
    page = dom(response)
    assert shown_payload(page) == TRICKY
    assert "not the latest" not in page.one("id", "value-h").squashed
    assert "Version 2" in page.one("id", "value-h").squashed
    # The editor starts from what is shown, based on the version shown.
    assert hidden_if_version(page) == "2"
    # A textarea cannot hold a lone CR: a browser submits every line break as CRLF.
    assert draft(page) == TRICKY.replace("\r\n", "\n").replace("\r", "\n")


def test_a_chosen_version_is_shown_and_marked_not_the_latest(
    team: Team, member_client: Client
) -> None:
    write_versions(team, "root", "first", "second", "third")
    page = dom(member_client.get(kv_page_url("root") + "?version=1"))
    assert shown_payload(page) == "first"
    heading = page.one("id", "value-h").squashed
    assert "Version 1" in heading
    assert "not the latest" in heading.lower()
    # The page still says what the latest is.
    assert "Latest v3" in " ".join(e.squashed for e in page.elements if e.tag == "p")
    assert page.one("data-kv-version", "1").get("aria-current") == "true"
    # Editing from here is based on the version the user was looking at.
    assert hidden_if_version(page) == "1"
    assert draft(page) == "first"

    latest = dom(member_client.get(kv_page_url("root") + "?version=3"))
    assert shown_payload(latest) == "third"
    assert "not the latest" not in latest.one("id", "value-h").squashed.lower()


@pytest.mark.parametrize("version", ["4", "0", "-1", "999999"])
def test_a_missing_version_is_404(team: Team, member_client: Client, version: str) -> None:
    write_versions(team, "root", "first", "second", "third")
    assert member_client.get(kv_page_url("root") + f"?version={version}").status_code == 404


def test_history_is_newest_first_and_pages_by_50(team: Team, member_client: Client) -> None:
    for n in range(1, 121):
        store.write(team, "root", f"line of version {n}\nsecond line")
    path = kv_page_url("root")
    page = dom(member_client.get(path))
    assert versions_listed(page) == list(range(120, 70, -1))
    entry = page.one("data-kv-version", "120")
    assert "line of version 120" in entry.squashed
    assert "second line" not in entry.squashed  # the first line only
    assert "120 versions" in page.one("aria-label", "History pages").squashed
    assert page.links("Newer") == []

    seen = versions_listed(page)
    for expected in (list(range(70, 20, -1)), list(range(20, 0, -1))):
        older = page.links("Older")
        assert len(older) == 1
        page = dom(member_client.get(urljoin(path, older[0])))
        assert versions_listed(page) == expected
        seen.extend(expected)
        # Paging the history leaves the value shown alone.
        assert shown_payload(page) == "line of version 120\nsecond line"
    assert page.links("Older") == []
    assert seen == list(range(120, 0, -1))
    newer = page.links("Newer")
    assert len(newer) == 1
    assert versions_listed(dom(member_client.get(urljoin(path, newer[0])))) == list(
        range(70, 20, -1)
    )


def test_a_diff_between_two_versions(team: Team, member_client: Client) -> None:
    write_versions(
        team,
        "root",
        "alpha\nbeta\ngamma\n",
        "alpha\nBETA <changed>\ngamma\n",
        "alpha\nBETA <changed>\ngamma\ndelta\n",
    )
    page = dom(member_client.get(kv_page_url("root") + "?from=1&to=2"))
    diff = page.one("data-kv-diff")
    assert diff.get("data-kv-diff") == "changed"
    assert diff_rows(diff) == [" alpha", "-beta", "+BETA <changed>", " gamma"]
    assert "+1 added −1 removed lines · v1 → v2" in page.one("id", "diff-panel").squashed
    # Any two versions, in either direction.
    backwards = dom(member_client.get(kv_page_url("root") + "?from=3&to=1"))
    assert diff_rows(backwards.one("data-kv-diff")) == [
        " alpha",
        "-BETA <changed>",
        "+beta",
        " gamma",
        "-delta",
    ]
    # Each history entry links to its diff with the previous version.
    history_page = dom(member_client.get(kv_page_url("root")))
    diff_links = [
        str(e.get("href"))
        for e in _descendants(history_page.one("data-kv-version", "3"))
        if e.tag == "a" and e.squashed.startswith("diff")
    ]
    assert len(diff_links) == 1
    linked = dom(member_client.get(urljoin(kv_page_url("root"), diff_links[0])))
    assert diff_rows(linked.one("data-kv-diff"))[-1] == "+delta"
    # Equal versions, and a version that does not exist.
    same = dom(member_client.get(kv_page_url("root") + "?from=2&to=2"))
    assert same.one("data-kv-diff").get("data-kv-diff") == "same"
    assert "No changes" in same.one("data-kv-diff").squashed
    missing = dom(member_client.get(kv_page_url("root") + "?from=1&to=9"))
    assert missing.all("data-kv-diff") == []
    assert "no version 9" in alert_text(missing)


# --- big payloads and query counts -------------------------------------------------


def test_a_large_multi_line_payload_renders_whole_and_quickly(
    team: Team, member_client: Client
) -> None:
    line = "The quick <brown> fox & the lazy dog \u2014 \u00e9t\u00e9 \U0001f600 "
    lines = [f"{n:05d} {line}{'x' * (n % 40)}" for n in range(700)]
    big = "\n".join(lines)[:35_000]
    assert len(big) == 35_000
    store.write(team, "ref.big", big)
    edited = big.replace("00350 ", "00350 EDITED ", 1)
    store.write(team, "ref.big", edited)
    member_client.get(kv_page_url("ref.big"))  # warm-up

    started = time.perf_counter()
    response = member_client.get(kv_page_url("ref.big"))
    elapsed = time.perf_counter() - started
    page = dom(response)
    assert elapsed < 2.0, elapsed
    assert shown_payload(page) == edited
    assert draft(page) == edited
    assert page.one("data-kv-version", "2").squashed.startswith("v2 35007 chars")
    assert page.one("data-kv-version", "1").squashed.startswith("v1 35000 chars")

    started = time.perf_counter()
    response = member_client.get(kv_page_url("ref.big") + "?from=1&to=2")
    elapsed = time.perf_counter() - started
    diff = dom(response).one("data-kv-diff")
    assert elapsed < 2.0, elapsed
    assert [d for d in diff_rows(diff) if d.startswith(("-0", "+0"))] == [
        "-" + lines[350],
        "+" + lines[350].replace("00350 ", "00350 EDITED ", 1),
    ]
    assert marked_words(diff) == ["+EDITED "]

    listing = dom(member_client.get("/kv/"))
    assert "35007 chars" in listing.one("data-kv-key", "ref.big").squashed


def test_the_list_does_not_query_per_key(
    team: Team, member_client: Client, django_assert_max_num_queries: Any
) -> None:
    store.write(team, "must.k000", "x")
    member_client.get("/kv/?prefix=must.")  # warm-up: session, team
    with django_assert_max_num_queries(15) as captured:
        assert member_client.get("/kv/?prefix=must.").status_code == 200
    one = len(captured)

    for i in range(1, 120):
        store.write(team, f"must.k{i:03d}", "x" * i)
    for path in ("/kv/?prefix=must.", "/kv/?prefix=must.&page=3"):
        with django_assert_max_num_queries(one, info=f"{path} of 120 keys"):
            assert member_client.get(path).status_code == 200
    htmx_one = member_client.get("/kv/?prefix=must.", headers=HTMX)
    assert htmx_one.status_code == 200
    with django_assert_max_num_queries(one, info="the htmx results of 120 keys"):
        assert member_client.get("/kv/?prefix=must.", headers=HTMX).status_code == 200


def test_the_detail_page_does_not_query_per_version(
    team: Team, member_client: Client, django_assert_max_num_queries: Any
) -> None:
    # Two versions: the page then shows everything it can (a diff, history previews).
    write_versions(team, "root", "v1", "v2")
    member_client.get(kv_page_url("root"))  # warm-up: session, team
    # Comparing two versions other than the one shown reads both.
    with django_assert_max_num_queries(15) as captured:
        assert member_client.get(kv_page_url("root") + "?from=1&to=1").status_code == 200
    one = len(captured)

    for n in range(3, 121):
        store.write(team, "root", f"version {n}\n" * 50)
    for query in ("", "?page=3", "?version=7", "?from=2&to=9", "?from=1&to=120&page=2"):
        path = kv_page_url("root") + query
        with django_assert_max_num_queries(one, info=f"{path} of 120 versions"):
            assert member_client.get(path).status_code == 200


def test_a_key_deleted_while_editing_answers_404_and_keeps_the_text(
    team: Team, member_client: Client
) -> None:
    store.write(team, "must.gone", "first\n")
    store.delete(team, "must.gone")
    response = member_client.post(
        "/kv/must.gone/",
        {"action": "write", "payload": "my edit\n", "if_version": "1", "team": "acme"},
    )
    page = dom(response, status=404)
    assert page.one("aria-label", "Your text", tag="textarea").text == "my edit\n"
    assert not Key.objects.filter(team=team, key="must.gone").exists()
