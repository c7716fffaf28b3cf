"""The key/value store in the real Chromium: the prefix box narrowing the list as you
type, and two people editing the same key at once (SPEC §7, §9).
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from kvstore import store
from kvstore.models import Version
from lens.models import Team
from tests.factories import login, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SCREENSHOT = "/tmp/kv-conflict.png"


def set_up(*usernames: str) -> Team:
    team = Team.objects.create(slug="acme", name="Acme")
    for username in usernames:
        make_user(username, team)
    return team


def rows(page: Any) -> list[str]:
    return [
        str(k)
        for k in page.locator("[data-kv-key]").evaluate_all(
            "els => els.map(el => el.dataset.kvKey)"
        )
    ]


def wait_for_rows(page: Any, expected: list[str]) -> None:
    page.wait_for_function(
        "expected => JSON.stringify([...document.querySelectorAll('[data-kv-key]')]"
        ".map(el => el.dataset.kvKey)) === JSON.stringify(expected)",
        arg=expected,
    )


# A diff's drawn rows as a unified diff reads: "-old", "+new", " same", "... N".
DIFF_LINES = """el => [...el.querySelectorAll('[data-diff-row]')].map(row =>
  row.dataset.diffRow === 'gap' ? '... ' + row.textContent.trim().split(/\\s+/)[1]
  : ({add: '+', delete: '-', context: ' '})[row.dataset.diffRow]
    + row.querySelector('.dl-text').textContent)"""


def diff_lines(locator: Any) -> list[str]:
    return [str(line) for line in locator.evaluate(DIFF_LINES)]


def stored(team: Team, key: str) -> list[tuple[int, str]]:
    return list(
        Version.objects.filter(key__team=team, key__key=key)
        .order_by("version")
        .values_list("version", "payload")
    )


def test_the_prefix_box_narrows_the_list_without_reloading(live_server: Any, page: Any) -> None:
    team = set_up("mira")
    keys = ["must.craft", "must.craft.traps", "must.crafty", "must.tone", "ref.api", "root"]
    for key in keys:
        store.write(team, key, f"payload of {key}")
    base = live_server.url

    login(page, base, "mira")
    page.goto(f"{base}/kv/")
    assert rows(page) == keys
    page.evaluate("window.__marker = 1")

    box = page.get_by_role("searchbox")
    box.press_sequentially("must.", delay=30)
    wait_for_rows(page, ["must.craft", "must.craft.traps", "must.crafty", "must.tone"])
    box.press_sequentially("craft.", delay=30)
    wait_for_rows(page, ["must.craft.traps"])
    # Each row shows the key's latest version and size, and links to it.
    row = page.locator('[data-kv-key="must.craft.traps"]')
    assert "v1" in row.inner_text()
    assert f"{len('payload of must.craft.traps')} chars" in row.inner_text()

    box.fill("nothing.")
    wait_for_rows(page, [])
    assert "No keys starting with nothing." in page.locator("#kv-results").inner_text()
    box.fill("r")
    wait_for_rows(page, ["ref.api", "root"])

    # htmx swapped the results: the page itself was never reloaded, the box kept its
    # text and focus, and the address says what is shown.
    assert page.evaluate("window.__marker") == 1
    assert box.input_value() == "r"
    assert page.evaluate("document.activeElement.name") == "prefix"
    assert page.url == f"{base}/kv/?prefix=r"

    # Clicking a result takes the focus from the box: that asks for nothing more, since a
    # late answer's history entry would cancel the link's navigation.
    asked: list[str] = []
    page.on(
        "request",
        lambda request: asked.append(request.url) if request.headers.get("hx-request") else None,
    )
    page.locator('[data-kv-key="root"] a').click()
    page.wait_for_url(f"{base}/kv/root/")
    assert asked == []
    assert page.locator("pre[data-kv-payload]").evaluate("el => el.textContent") == (
        "payload of root"
    )
    # Back to the filtered list: the whole page, box included, not a bare fragment.
    page.go_back()
    page.wait_for_url(f"{base}/kv/?prefix=r")
    page.get_by_role("searchbox").wait_for()
    wait_for_rows(page, ["ref.api", "root"])
    assert page.locator("h1", has_text="Key/value store").count() == 1


def test_a_concurrent_edit_shows_a_conflict_instead_of_overwriting(
    live_server: Any, browser: Any
) -> None:
    team = set_up("ada", "bo")
    store.write(team, "must.tone", "Be brief.\nBe kind.\n")
    base = live_server.url
    contexts = [browser.new_context(viewport={"width": 1280, "height": 1000}) for _ in range(2)]
    try:
        ada, bo = (context.new_page() for context in contexts)
        for page, username in ((ada, "ada"), (bo, "bo")):
            page.set_default_timeout(10_000)
            login(page, base, username)
            page.goto(f"{base}/kv/must.tone/")
            assert page.locator("#value-h").inner_text().startswith("Version 1")
            assert page.locator("#payload").input_value() == "Be brief.\nBe kind.\n"

        # A save redirects to the key's page in the team its form was rendered for.
        saved_page = re.compile(rf"{re.escape(base)}/kv/must\.tone/\?team=[a-z0-9-]+$")
        # Ada saves first: v2.
        ada_text = "Be brief.\nBe kind.\nCite sources.\n"
        ada.locator("#payload").fill(ada_text)
        ada.get_by_role("button", name="Save as v2").click()
        ada.wait_for_url(saved_page)
        ada.get_by_text("Saved version 2.").wait_for()
        assert ada.locator("pre[data-kv-payload]").evaluate("el => el.textContent") == ada_text
        assert stored(team, "must.tone")[-1] == (2, ada_text)

        # Bo, still looking at v1, saves too: a conflict naming v2, nothing written.
        bo_text = "Be brief.\nBe warm, not <gushing> & never rude.\n"
        bo.locator("#payload").fill(bo_text)
        bo.get_by_role("button", name="Save as v2").click()
        error = bo.locator("[data-write-error]")
        error.wait_for()
        assert "version 2" in error.inner_text()
        assert "v2" in error.inner_text()
        assert bo.locator("#payload").input_value() == bo_text
        assert diff_lines(bo.locator("[data-conflict-diff]")) == [
            " Be brief.",
            "-Be kind.",
            "-Cite sources.",
            "+Be warm, not <gushing> & never rude.",
        ]
        # The page shows the stored latest: Ada's.
        assert bo.locator("pre[data-kv-payload]").evaluate("el => el.textContent") == ada_text
        assert stored(team, "must.tone") == [(1, "Be brief.\nBe kind.\n"), (2, ada_text)]
        error.scroll_into_view_if_needed()
        bo.screenshot(path=SCREENSHOT, full_page=True)

        # Bo saves again, deliberately: v3 is Bo's text.
        bo.get_by_role("button", name="Save as v3").click()
        bo.wait_for_url(saved_page)
        bo.get_by_text("Saved version 3.").wait_for()
        assert bo.locator("pre[data-kv-payload]").evaluate("el => el.textContent") == bo_text
        assert stored(team, "must.tone") == [
            (1, "Be brief.\nBe kind.\n"),
            (2, ada_text),
            (3, bo_text),
        ]
        # Ada's diff from her version to Bo's shows his change.
        ada.goto(f"{base}/kv/must.tone/?from=2&to=3")
        assert "-Cite sources." in diff_lines(ada.locator("[data-kv-diff]"))
        assert "+Be warm, not <gushing> & never rude." in diff_lines(ada.locator("[data-kv-diff]"))
    finally:
        for context in contexts:
            context.close()


def test_the_diff_is_coloured_and_the_pickers_swap_it_in_place(
    live_server: Any, browser: Any
) -> None:
    team = set_up("mira")
    old = "".join(f"Step {i}: check the gauge.\n" for i in range(1, 13))
    long_line = "Step 8b: and keep going " * 30
    new = (
        old.replace("Step 6: check the gauge.", "Step 6: check the valve.")
        .replace("Step 8: check the gauge.\n", f"Step 8: check the gauge.\n{long_line}\n")
        .replace("Step 11: check the gauge.\n", "")
    )
    for payload in (old, new, new + "Step 13: done.\n"):
        store.write(team, "ref.runbook", payload)
    base = live_server.url
    context = browser.new_context(viewport={"width": 390, "height": 900})
    try:
        page = context.new_page()
        page.set_default_timeout(10_000)
        login(page, base, "mira")
        page.goto(f"{base}/kv/ref.runbook/?from=1&to=2")
        diff = page.locator("[data-kv-diff]")
        rows = diff_lines(diff)
        assert rows == [
            "... 2",
            " Step 3: check the gauge.",
            " Step 4: check the gauge.",
            " Step 5: check the gauge.",
            "-Step 6: check the gauge.",
            "+Step 6: check the valve.",
            " Step 7: check the gauge.",
            " Step 8: check the gauge.",
            "+" + long_line,
            " Step 9: check the gauge.",
            " Step 10: check the gauge.",
            "-Step 11: check the gauge.",
            " Step 12: check the gauge.",
        ]

        # Removed and added lines are tinted with the palette's colours, the changed
        # words inside them more strongly.
        def colour(selector: str, prop: str = "background-color") -> str:
            return str(
                page.locator(selector).first.evaluate(f"el => getComputedStyle(el)['{prop}']")
            )

        palette = page.evaluate(
            """() => Object.fromEntries(['--add-bg', '--del-bg', '--add-ink', '--del-ink']
                .map(name => {
                  const probe = document.createElement('span');
                  probe.style.color = `var(${name})`;
                  document.body.append(probe);
                  const value = getComputedStyle(probe).color;
                  probe.remove();
                  return [name, value];
                }))"""
        )
        assert colour('[data-diff-row="add"]') == palette["--add-bg"]
        assert colour('[data-diff-row="delete"]') == palette["--del-bg"]
        assert colour('[data-diff-row="add"]', "color") == palette["--add-ink"]
        assert colour('[data-diff-row="delete"]', "color") == palette["--del-ink"]
        assert colour('[data-diff-row="context"]') != palette["--add-bg"]
        assert diff.locator("ins").first.inner_text() == "valve"
        assert diff.locator("del").first.inner_text() == "gauge"
        assert colour("[data-kv-diff] ins") not in (palette["--add-bg"], "rgba(0, 0, 0, 0)")

        # On a phone the long line scrolls inside the diff's box, never the page.
        box = page.locator(".kv-diff-scroll")
        assert box.evaluate("el => el.scrollWidth > el.clientWidth")
        assert page.evaluate("document.documentElement.scrollWidth") <= 390

        # Choosing versions swaps the comparison in place, and the address follows.
        page.evaluate("window.__marker = 1")
        page.locator('select[name="from"]').select_option("2")
        page.wait_for_url(f"{base}/kv/ref.runbook/?from=2&to=2")
        page.locator("[data-kv-diff]", has_text="No changes").wait_for()
        # The first swap settles before the next choice (a loaded machine is slow to).
        page.wait_for_function(
            "() => !document.querySelector('.htmx-request, .htmx-settling, .htmx-swapping')"
        )
        page.locator('select[name="to"]').select_option("3")
        page.wait_for_url(f"{base}/kv/ref.runbook/?from=2&to=3")
        page.wait_for_function(
            "() => [...document.querySelectorAll('[data-diff-row]')].length === 5"
        )
        assert diff_lines(page.locator("[data-kv-diff]")) == [
            "... 9",
            " Step 9: check the gauge.",
            " Step 10: check the gauge.",
            " Step 12: check the gauge.",
            "+Step 13: done.",
        ]
        assert page.evaluate("window.__marker") == 1
        page.screenshot(path="/tmp/kv-diff.png", full_page=True)
    finally:
        context.close()


def test_a_history_diff_link_swaps_the_comparison_in_place(live_server: Any, page: Any) -> None:
    team = set_up("mira")
    for payload in ("one\n", "one\ntwo\n", "one\ntwo\nthree\n"):
        store.write(team, "root", payload)
    base = live_server.url
    login(page, base, "mira")
    page.goto(f"{base}/kv/root/")
    assert diff_lines(page.locator("[data-kv-diff]")) == [" one", " two", "+three"]
    page.evaluate("window.__marker = 1")
    page.locator('[data-kv-version="2"] a', has_text="diff").click()
    page.wait_for_url(f"{base}/kv/root/?from=1&to=2")
    page.wait_for_function("() => document.querySelectorAll('[data-diff-row]').length === 2")
    assert diff_lines(page.locator("[data-kv-diff]")) == [" one", "+two"]
    assert page.evaluate("window.__marker") == 1
    assert page.locator('select[name="from"]').input_value() == "1"
    assert page.locator('select[name="to"]').input_value() == "2"
