"""The Content-Security-Policy in the real Chromium (SPEC §13): every page of the tour,
the admin's included, loads and runs with no violation (no inline script or style, no
eval) and no console error at all, and so do htmx's partial updates; htmx keeps no copy of a page in the browser's
storage, and logging out leaves none behind.
"""

from __future__ import annotations

from typing import Any

import pytest

from tools.tour import Visitor, log_in, seed, stops

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Runs in every document before its own scripts: each violation is kept on the window.
COLLECT_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__cspViolations.push({
    directive: e.effectiveDirective, blocked: e.blockedURI, sample: e.sample,
    source: e.sourceFile, line: e.lineNumber,
  });
});
"""
READ_VIOLATIONS = "() => window.__cspViolations || []"
HISTORY_CACHE = "htmx-history-cache"
STORED_COPIES = f"""() => [sessionStorage.getItem("{HISTORY_CACHE}"),
                          localStorage.getItem("{HISTORY_CACHE}")]"""


class Watched:
    """A browser context whose pages record every policy violation, from the page's
    events and from the console (where Chromium also reports them)."""

    def __init__(self, browser: Any) -> None:
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.context.add_init_script(COLLECT_VIOLATIONS)
        self.console: list[str] = []
        # Every console error, of any kind (a missing icon, a script's exception...).
        self.errors: list[str] = []
        self.page = self.context.new_page()
        self.page.set_default_timeout(20_000)
        self.page.on("console", self._on_console)
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))

    def _on_console(self, message: Any) -> None:
        if "Content Security Policy" in message.text:
            self.console.append(message.text)
        if message.type == "error":
            self.errors.append(f"{message.text} ({message.location.get('url')})")

    def violations(self) -> list[Any]:
        found: list[Any] = self.page.evaluate(READ_VIOLATIONS)
        return found + self.console

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def watched(browser: Any) -> Any:
    opened: list[Watched] = []

    def open_one() -> Watched:
        opened.append(Watched(browser))
        return opened[-1]

    yield open_one
    for one in opened:
        one.close()


def test_no_page_of_the_tour_violates_the_policy(live_server: Any, watched: Any) -> None:
    seed()
    tour = stops()
    problems: dict[str, list[Any]] = {}
    errors: dict[str, list[str]] = {}
    visitors: list[Visitor] = ["demo", "loner", "anonymous"]
    for visitor in visitors:
        mine = [stop for stop in tour if stop.visitor == visitor]
        browser_tab = watched()
        log_in(browser_tab.page, live_server.url, visitor)
        if found := browser_tab.violations():
            problems[f"{visitor} logging in"] = found
        for stop in mine:
            response = browser_tab.page.goto(f"{live_server.url}{stop.path}")
            assert response is not None
            assert response.status == stop.status, (stop, response.status)
            assert "script-src 'self'" in response.headers["content-security-policy"]
            browser_tab.page.wait_for_load_state("load")
            # htmx's loads after the first paint (the lens's Cache stability card).
            browser_tab.page.wait_for_load_state("networkidle")
            if found := browser_tab.violations():
                problems[f"{stop.name} {stop.path}"] = found
                browser_tab.console.clear()
            # A page due to fail (the 404 page) reports its own status; nothing else may.
            if stop.status >= 400:
                browser_tab.errors[:] = [e for e in browser_tab.errors if stop.path not in e]
            if browser_tab.errors:
                errors[f"{stop.name} {stop.path}"] = list(browser_tab.errors)
                browser_tab.errors.clear()
    assert len({stop.name for stop in tour}) >= 15
    assert not problems, problems
    assert not errors, errors


def test_the_api_docs_run_under_the_policy(live_server: Any, watched: Any) -> None:
    tab = watched()
    response = tab.page.goto(f"{live_server.url}/api/docs")
    assert response is not None
    assert response.status == 200
    tab.page.locator(".swagger-ui .info").wait_for()
    assert tab.violations() == []


def test_htmx_updates_run_under_the_policy_and_keep_no_copies(
    live_server: Any, watched: Any
) -> None:
    seed()
    tab = watched()
    page = tab.page
    log_in(page, live_server.url, "demo")
    kv_key = next(stop for stop in stops() if stop.name == "kv-key")
    page.goto(f"{live_server.url}{kv_key.path.split('?')[0]}")
    # A diff link swaps the comparison in with htmx and pushes its address.
    link = page.locator("a.kv-diff-link").first
    with page.expect_response(lambda r: "from=" in r.url and r.request.headers.get("hx-request")):
        link.click()
    page.wait_for_url("**from=*")
    # htmx saved the page it left into its history cache, unless told to keep none.
    assert page.evaluate(STORED_COPIES) == [None, None]
    # The indicator rules come from the stylesheet, not an injected <style>.
    assert page.evaluate("() => document.querySelectorAll('style').length") == 0
    assert tab.violations() == []


def the_queue(live_server: Any, watched: Any) -> tuple[Watched, Any]:
    """The demo's approvals queue in a watched tab, logged in as the demo's reviewer."""
    seed()
    tab = watched()
    log_in(tab.page, live_server.url, "demo")
    tab.page.goto(f"{live_server.url}/approvals/")
    return tab, tab.page


def test_publishing_a_proposal_from_the_queue_runs_under_the_policy(
    live_server: Any, watched: Any
) -> None:
    tab, page = the_queue(live_server, watched)
    row = page.locator("li[data-proposal-id]").first
    # Details, then the config diff inside it, open in place.
    row.locator("details > summary").first.click()
    row.locator("details.proposal-diff > summary").first.click()
    # Publish asks in a dialog; its own button publishes.
    row.get_by_role("button", name="Publish", exact=True).click()
    page.locator("dialog[open] [data-confirm-publish]").click()
    page.locator('li[data-proposal-id][data-decision="published"]').wait_for()
    assert tab.violations() == []


def test_deciding_memories_in_the_queue_logs_no_console_error(
    live_server: Any, watched: Any
) -> None:
    tab, page = the_queue(live_server, watched)
    for decision in ("Approve", "Reject"):
        row = page.locator("li[data-promotion-id]:not([data-decision])").first
        record = row.get_attribute("data-promotion-id")
        row.get_by_role("button", name=decision, exact=True).click()
        page.locator(f'li[data-promotion-id="{record}"][data-decision]').wait_for()
    page.wait_for_load_state("networkidle")
    assert tab.violations() == []
    assert tab.errors == []


def test_a_row_decided_while_the_notes_refresh_logs_no_console_error(
    live_server: Any, watched: Any
) -> None:
    """Approving a row asks for the other rows' budget notes again; a row decided while
    that answer is on its way has no note left to replace, and nothing complains."""
    tab, page = the_queue(live_server, watched)
    held: list[Any] = []
    # The server answers at once; the answer reaches the page only once the second row
    # has been decided (as on a slow network).
    page.route("**/approvals/impacts/**", lambda route: held.append((route, route.fetch())))
    pending = "li[data-promotion-id]:not([data-decision])"
    agent = page.locator(pending).first.get_attribute("data-agent")
    same_agent = page.locator(f'{pending}[data-agent="{agent}"]')
    assert same_agent.count() >= 2
    first = same_agent.nth(0).get_attribute("data-promotion-id")
    second = same_agent.nth(1).get_attribute("data-promotion-id")
    page.locator(f'li[data-promotion-id="{first}"]').get_by_role(
        "button", name="Approve", exact=True
    ).click()
    page.locator(f'li[data-promotion-id="{first}"][data-decision]').wait_for()
    for _ in range(50):  # the refresh is asked for once the first row has landed
        if held:
            break
        page.wait_for_timeout(100)
    assert held, "no refresh of the budget notes was asked for"
    page.locator(f'li[data-promotion-id="{second}"]').get_by_role(
        "button", name="Reject", exact=True
    ).click()
    page.locator(f'li[data-promotion-id="{second}"][data-decision]').wait_for()
    route, answer = held[0]
    route.fulfill(response=answer)
    page.wait_for_load_state("networkidle")
    page.wait_for_timeout(300)
    assert tab.errors == []


def test_logging_out_leaves_no_copy_of_a_page_behind(live_server: Any, watched: Any) -> None:
    seed()
    tab = watched()
    page = tab.page
    log_in(page, live_server.url, "demo")
    page.goto(f"{live_server.url}/memories/")
    # What an older version of the product (or another tab) may have left.
    page.evaluate(
        f"""() => {{
          sessionStorage.setItem("{HISTORY_CACHE}", "[{{\\"content\\": \\"secret\\"}}]");
          localStorage.setItem("{HISTORY_CACHE}", "[{{\\"content\\": \\"secret\\"}}]");
        }}"""
    )
    assert page.evaluate(STORED_COPIES) != [None, None]
    page.get_by_role("button", name="Log out").click()
    page.wait_for_url("**/accounts/login/**")
    assert page.evaluate(STORED_COPIES) == [None, None]
    assert tab.violations() == []
