"""A key's page compares versions (SPEC §7, §9): version pickers that work with and
without htmx, a coloured line diff with changed words marked, bounded on the largest
and most repetitive payloads, a history that says what each version changed, and
downloads of whole versions for diffs too large to draw.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import Client

from kvstore import history, store
from kvstore.core.keys import PAYLOAD_MAX_RUNES
from lens.models import Team
from tests.api_calls import ApiClient, kv_url
from tests.factories import HTMX, kv_page_url, write_versions
from tests.kvstore.diff_rows import diff_rows, line_numbers, marked_words
from tests.pages import Dom, Element, alert_text, dom, fragment, inside
from tests.samples import fastest

pytestmark = pytest.mark.django_db

# Generous for a loaded CI machine: the diff itself is bounded to a fraction of this
# (the largest page takes ~0.3 s alone; the unbounded diff took minutes). Each timing is
# the fastest of a few runs (``fastest``); the suite's other worker may be running a
# test that starts servers of its own, which took the fastest run to 1.06 s.
WORST_SECONDS = 1.5

# Two 9,000-line versions of 100 repeated lines, shuffled differently.
SHUFFLED_OLD = "\n".join(str(i % 100) for i in range(9000))
SHUFFLED_NEW = "\n".join(str((i * 7) % 100) for i in range(9000))


def picker(page: Dom, name: str) -> Element:
    return page.one("name", name, tag="select")


def options(select: Element) -> list[tuple[str, str]]:
    return [(str(o.get("value")), o.squashed) for o in inside(select, "option")]


def selected(select: Element) -> str:
    (chosen,) = [str(o.get("value")) for o in inside(select, "option") if "selected" in o.attrs]
    return chosen


def timed_get(client: Client, path: str, **extra: Any) -> tuple[Any, float]:
    client.get(path, **extra)  # warm-up: templates, session
    return fastest(lambda: client.get(path, **extra))


# --- the pickers -----------------------------------------------------------------------


def test_the_pickers_list_versions_and_default_to_the_previous_and_the_latest(
    team: Team, member_client: Client
) -> None:
    write_versions(team, "root", "one\n", "one\ntwo\n", "one\ntwo\nthree!\n")
    page = dom(member_client.get(kv_page_url("root")))
    for name in ("from", "to"):
        listed = options(picker(page, name))
        assert [value for value, _label in listed] == ["3", "2", "1"]
        # Each names its version, when it was written and its size.
        label = dict(listed)["3"]
        assert label.startswith("v3 · ")
        assert label.endswith(" · 15 chars")
    assert (selected(picker(page, "from")), selected(picker(page, "to"))) == ("2", "3")
    # And the diff shown is that one, without asking.
    assert diff_rows(page.one("data-kv-diff")) == [" one", " two", "+three!"]
    # The pickers are a plain GET form to the page itself: no JavaScript needed.
    form = picker(page, "from").ancestor("form")
    assert form is not None
    assert form.get("method") == "get"
    assert urlsplit(str(form.get("action"))).path == kv_page_url("root")


def test_a_chosen_version_is_compared_with_the_one_before_it(
    team: Team, member_client: Client
) -> None:
    write_versions(team, "root", "a\n", "b\n", "c\n")
    page = dom(member_client.get(kv_page_url("root") + "?version=2"))
    assert (selected(picker(page, "from")), selected(picker(page, "to"))) == ("1", "2")
    assert diff_rows(page.one("data-kv-diff")) == ["-a", "+b"]
    # The form keeps the version shown.
    assert page.one("name", "version", tag="input").get("value") == "2"


def test_a_key_with_one_version_has_nothing_to_compare(team: Team, member_client: Client) -> None:
    store.write(team, "root", "only\n")
    page = dom(member_client.get(kv_page_url("root")))
    assert page.all("name", "from") == []
    assert page.all("data-kv-diff") == []
    assert "nothing to compare" in page.one("id", "diff-panel").squashed


def test_the_pickers_list_the_newest_versions_and_any_older_one_asked_for(
    team: Team, member_client: Client
) -> None:
    for n in range(1, history.PICKER_MAX + 11):
        store.write(team, "root", f"v{n}\n")
    latest = history.PICKER_MAX + 10
    page = dom(member_client.get(kv_page_url("root")))
    listed = [int(value) for value, _label in options(picker(page, "from"))]
    assert listed == list(range(latest, 10, -1))
    asked = dom(member_client.get(kv_page_url("root") + "?from=3&to=7"))
    listed = [int(value) for value, _label in options(picker(asked, "to"))]
    assert listed == [*range(latest, 10, -1), 7, 3]
    assert (selected(picker(asked, "from")), selected(picker(asked, "to"))) == ("3", "7")
    assert diff_rows(asked.one("data-kv-diff")) == ["-v3", "+v7"]


def test_htmx_gets_only_the_comparison_and_a_restore_gets_the_page(
    team: Team, member_client: Client
) -> None:
    write_versions(team, "root", "a\n", "b\n", "c\n")
    headers = {**HTMX, "HX-Target": "diff-panel"}
    response = member_client.get(kv_page_url("root") + "?from=1&to=3", headers=headers)
    page = fragment(response)
    assert page.elements[0].get("id") == "diff-panel"
    assert diff_rows(page.one("data-kv-diff")) == ["-a", "+c"]
    assert page.all("data-kv-payload") == []
    # The form that sent it asks for the same swap again.
    form = picker(page, "from").ancestor("form")
    assert form is not None
    assert form.get("hx-target") == "#diff-panel"
    assert form.get("hx-get") == kv_page_url("root")
    assert "hx-request" in response.get("Vary", "").lower()
    # htmx restoring a pushed address it has no snapshot of needs the whole page.
    restored = member_client.get(
        kv_page_url("root") + "?from=1&to=3",
        headers={**headers, "HX-History-Restore-Request": "true"},
    )
    assert "<html" in restored.content.decode()
    # Any other htmx request (a boosted link) gets the whole page too.
    whole = member_client.get(kv_page_url("root"), headers=HTMX)
    assert "<html" in whole.content.decode()


# --- the diff --------------------------------------------------------------------------


def test_changed_words_are_marked_and_lines_numbered(team: Team, member_client: Client) -> None:
    old = "".join(f"Step {i}: check the gauge.\n" for i in range(1, 21))
    new = old.replace("Step 5: check the gauge.", "Step 5: check the valve.").replace(
        "Step 15: check the gauge.\n", ""
    )
    write_versions(team, "runbook", old, new)
    diff = dom(member_client.get(kv_page_url("runbook"))).one("data-kv-diff")
    assert marked_words(diff) == ["-gauge", "+valve"]
    rows = diff_rows(diff)
    assert rows[:6] == [
        "... 1",
        " Step 2: check the gauge.",
        " Step 3: check the gauge.",
        " Step 4: check the gauge.",
        "-Step 5: check the gauge.",
        "+Step 5: check the valve.",
    ]
    assert "-Step 15: check the gauge." in rows
    assert rows[-1] == "... 2"
    numbers = dict(zip(rows[1:], line_numbers(diff), strict=False))
    assert numbers["-Step 5: check the gauge."] == ("5", "")
    assert numbers["+Step 5: check the valve."] == ("", "5")
    assert ("16", "15") in line_numbers(diff)  # after the removed line, the sides differ


def test_the_diff_is_escaped_and_keeps_every_character(team: Team, member_client: Client) -> None:
    write_versions(team, "root", "a <b>bold</b> & line\r\n", "a <i>bold</i> & line\r\n")
    response = member_client.get(kv_page_url("root"))
    assert "<i>bold" not in response.content.decode()
    assert diff_rows(dom(response).one("data-kv-diff")) == [
        "-a <b>bold</b> & line\r",
        "+a <i>bold</i> & line\r",
    ]


def test_a_final_newline_change_is_said_in_words(team: Team, member_client: Client) -> None:
    write_versions(team, "root", "one\ntwo\n", "one\ntwo")
    page = dom(member_client.get(kv_page_url("root")))
    diff = page.one("data-kv-diff")
    assert diff.get("data-kv-diff") == "newline_only"
    assert diff_rows(diff) == []
    assert "Only the final newline differs" in diff.squashed
    assert "No newline at end of file" not in page.one("id", "diff-panel").text


def test_identical_versions_say_no_changes(team: Team, member_client: Client) -> None:
    write_versions(team, "root", "same\n", "same\n")
    page = dom(member_client.get(kv_page_url("root")))
    assert "No changes" in page.one("data-kv-diff").squashed
    assert "Same text as v1" in page.one("data-kv-version", "2").squashed


# --- bad versions in the address -------------------------------------------------------


@pytest.mark.parametrize(
    "query",
    [
        "from=abc&to=2",
        "from=1&to=99999999999999999999",
        "from=99999999999999999999&to=1",
        "from=0&to=2",
        "from=-1&to=2",
        "from=1.5&to=2",
        "from=%EF%BC%91&to=2",  # a fullwidth digit: not a version number here
    ],
)
def test_a_malformed_version_to_compare_is_a_clear_400(
    team: Team, member_client: Client, query: str
) -> None:
    write_versions(team, "root", "a\n", "b\n")
    response = member_client.get(kv_page_url("root") + "?" + query)
    page = dom(response, status=400)
    assert "must be a version number from 1 to 2" in alert_text(page)
    assert "\x00" not in response.content.decode()  # quoted back printable only
    assert page.all("data-kv-diff") == []
    # The rest of the page is still there.
    assert page.one("data-kv-payload").text == "b\n"


@pytest.mark.parametrize("version", ["99999999999999999999", "abc", "1e3", " 1"])
def test_a_version_that_cannot_exist_is_404_never_500(
    team: Team, member_client: Client, version: str
) -> None:
    store.write(team, "root", "a\n")
    assert member_client.get(kv_page_url("root") + f"?version={version}").status_code == 404


def test_a_version_in_range_that_does_not_exist_is_said(team: Team, member_client: Client) -> None:
    write_versions(team, "root", "a\n", "b\n")
    page = dom(member_client.get(kv_page_url("root") + "?from=2&to=2147483647"))
    assert "has no version 2147483647" in alert_text(page)


# --- who may compare and download -------------------------------------------------------


def test_raw_versions_download_for_members_only(
    team: Team, other_team: Team, member_client: Client, stranger_client: Client
) -> None:
    write_versions(team, "must.a", "first <text>\n", "second\n")
    response = member_client.get("/kv/must.a/raw/?version=1")
    assert response.status_code == 200
    assert response.content.decode() == "first <text>\n"
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="must.a.v1.txt"'
    for query in ("", "?version=3", "?version=0", "?version=99999999999999999999", "?version=x"):
        assert member_client.get("/kv/must.a/raw/" + query).status_code == 404, query
    assert member_client.get("/kv/nothing/raw/?version=1").status_code == 404
    # Another team's key, even one with the same name, is as if it did not exist.
    assert stranger_client.get("/kv/must.a/raw/?version=1").status_code == 404
    assert stranger_client.get(kv_page_url("must.a") + "?from=1&to=2").status_code == 404
    store.write(other_team, "must.a", "theirs\n")
    assert stranger_client.get("/kv/must.a/raw/?version=1").content.decode() == "theirs\n"
    assert stranger_client.get("/kv/must.a/raw/?version=2").status_code == 404
    anonymous = Client().get("/kv/must.a/raw/?version=1")
    assert anonymous.status_code == 302
    assert urlsplit(anonymous["Location"]).path == "/accounts/login/"


# --- bounded --------------------------------------------------------------------------


def test_two_9000_line_versions_are_too_large_to_draw_and_answer_quickly(
    team: Team, member_client: Client
) -> None:
    write_versions(team, "ref.big", SHUFFLED_OLD, SHUFFLED_NEW)
    response, elapsed = timed_get(member_client, kv_page_url("ref.big"))
    assert elapsed < WORST_SECONDS, elapsed
    page = dom(response)
    diff = page.one("data-kv-diff")
    assert diff.get("data-kv-diff") == "too_large"
    assert "too large to compare inline (9000 and 9000 lines" in diff.squashed
    downloads = [str(a.get("href")) for a in inside(diff, "a")]
    assert [parse_qs(urlsplit(href).query) for href in downloads] == [
        {"version": ["1"]},
        {"version": ["2"]},
    ]
    assert member_client.get(downloads[1]).content.decode() == SHUFFLED_NEW
    assert "/api/kv/ref.big/diff?from=1&to=2" in diff.squashed


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("a\n" * (PAYLOAD_MAX_RUNES // 2), "a\nb\n" * (PAYLOAD_MAX_RUNES // 4)),
        ("ab " * (PAYLOAD_MAX_RUNES // 3), "ba " * (PAYLOAD_MAX_RUNES // 3)),
        (
            "".join(f"{i:04d} the same words here\n" for i in range(990)),
            "".join(f"{i:04d} the same words there\n" for i in range(990)),
        ),
    ],
)
def test_the_largest_payloads_answer_quickly(
    team: Team, member_client: Client, old: str, new: str
) -> None:
    write_versions(team, "ref.big", old, new)
    response, elapsed = timed_get(member_client, kv_page_url("ref.big"))
    assert response.status_code == 200
    assert elapsed < WORST_SECONDS, elapsed


def test_the_api_diff_is_bounded_and_keeps_its_shape(team: Team, api: ApiClient) -> None:
    write_versions(team, "ref.big", SHUFFLED_OLD, SHUFFLED_NEW)
    api.get(kv_url("ref.big", "/diff?from=1&to=2"))  # warm-up
    response, elapsed = fastest(lambda: api.get(kv_url("ref.big", "/diff?from=1&to=2")))
    assert elapsed < WORST_SECONDS, elapsed
    body = response.json()
    assert set(body) == {"id", "from", "to", "diff"}
    lines = body["diff"].splitlines()
    # Past the budget: the common first line kept, everything after it replaced.
    assert lines[:4] == ["--- ref.big@1", "+++ ref.big@2", "@@ -1,9000 +1,9000 @@", " 0"]
    assert [line[1:] for line in lines if line.startswith("+") and line[:3] != "+++"] == (
        SHUFFLED_NEW.split("\n")[1:]
    )


# --- history -----------------------------------------------------------------------------


def test_each_history_entry_says_what_it_changed(team: Team, member_client: Client) -> None:
    write_versions(
        team,
        "root",
        "# Title\nfirst rule\n",
        "# Title\nfirst rule\nsecond rule\nthird rule\n",
        "# Title\nthird rule\n",
        "# Title\nthird rule",
        "# Title\nthird rule",
    )
    page = dom(member_client.get(kv_page_url("root")))

    def said(version: int) -> str:
        entry = page.one("data-kv-version", str(version))
        (change,) = [e for e in entry.descendants() if "data-kv-change" in e.attrs]
        return change.squashed

    assert said(1) == "+2 lines added first added line: # Title"
    assert said(2) == "+2 lines added first added line: second rule"
    assert said(3) == "−2 lines removed first removed line: first rule"
    assert said(4) == "Only the final newline changed"
    assert said(5) == "Same text as v4"
    # Not the same first line for every version any more.
    assert len({said(v) for v in range(1, 6)}) == 5


def test_history_previews_of_large_versions_stay_quick_and_say_when_they_are_rough(
    team: Team, member_client: Client
) -> None:
    for n in range(1, 8):  # odd versions the old text, even ones the new
        store.write(team, "ref.big", SHUFFLED_OLD if n % 2 else SHUFFLED_NEW)
    response, elapsed = timed_get(member_client, kv_page_url("ref.big"))
    assert elapsed < 2 * WORST_SECONDS, elapsed
    page = dom(response)
    # Past its budget a preview counts what lies between the common first and last
    # lines: an upper bound, and it says so.
    assert page.one("data-kv-version", "7").squashed.endswith(
        "≤ at most +8999 lines added −8999 lines removed first added line: 1"
    )
    assert page.one("data-kv-version", "6").squashed.endswith("first added line: 7")


def test_history_previews_do_not_query_per_version(
    team: Team, member_client: Client, django_assert_max_num_queries: Any
) -> None:
    write_versions(team, "root", "a\n", "b\n")
    member_client.get(kv_page_url("root"))
    with django_assert_max_num_queries(15) as captured:
        member_client.get(kv_page_url("root"))
    for n in range(60):
        store.write(team, "root", f"line {n}\n" * (n % 5))
    with django_assert_max_num_queries(len(captured)):
        page = dom(member_client.get(kv_page_url("root") + "?page=2"))
    assert len(page.all("data-kv-change")) == 12
