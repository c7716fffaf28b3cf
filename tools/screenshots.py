"""``make screenshots``: every page of the tour (tools/tour.py) at 390 and 1440 pixels
wide, light and dark, as full-page PNGs under var/screenshots/, named
``<page>-<width>-<scheme>.png`` (``lens-wren-390-dark.png``).

The data is the demo's plus a big agent (40 sections of 50 entries, a few hundred
memories), in a scratch SQLite database made for the run: nothing else is touched. The
pages are served with DEBUG off, as in production, by a server on a free loopback port;
Chromium is ``$CHROMIUM`` (default /usr/bin/chromium).
"""

from __future__ import annotations

import os
import secrets
import shutil
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

_scratch = tempfile.mkdtemp(prefix="lens-screenshots-")
# Always a scratch database, whatever DATABASE_URL says: the run writes demo data.
os.environ["DATABASE_URL"] = f"sqlite:///{_scratch}/screenshots.sqlite3"
# As in production: DEBUG off, so the error pages are the product's own.
os.environ["DEBUG"] = "0"
os.environ["SECRET_KEY"] = secrets.token_urlsafe(50)
os.environ["ALLOWED_HOSTS"] = "127.0.0.1"
# Hashed, compressed static files as `make serve` has them, collected into the scratch dir.
os.environ["STATIC_ROOT"] = f"{_scratch}/static"
# The 404s and the refused form are on purpose: no warnings for them in the output.
os.environ.setdefault("LOG_LEVEL", "ERROR")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lens.settings")
# Playwright's sync API runs an event loop in this thread; the ORM calls are plain.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth.models import User  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler  # noqa: E402
from django.core.wsgi import get_wsgi_application  # noqa: E402
from django.template.loader import render_to_string  # noqa: E402

from lens.actors import SYSTEM  # noqa: E402
from lens.models import Membership, Team  # noqa: E402
from tools.tour import BIG_MODEL_WINDOWS, Stop, log_in, seed, stops, walk  # noqa: E402
from webhooks.endpoints import delete_endpoint  # noqa: E402
from webhooks.models import Endpoint  # noqa: E402

OUT = Path(__file__).resolve().parent.parent / "var" / "screenshots"
# (width, height): a phone (iPhone 12-15) and a desktop.
SCREENS = ((390, 844), (1440, 900))
SCHEMES = ("light", "dark")
SECRET_HOOK = "https://93.184.215.99/hooks/new"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync"]


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def serve() -> tuple[ThreadedWSGIServer, str]:
    """The product on a free loopback port, in a background thread."""
    call_command("collectstatic", interactive=False, verbosity=0)
    server = ThreadedWSGIServer(("127.0.0.1", 0), _QuietHandler, allow_reuse_address=False)
    server.set_app(get_wsgi_application())
    threading.Thread(target=server.serve_forever, daemon=True).start()
    host, port = server.server_address[:2]
    return server, f"http://{host!s}:{port}"


def shoot(page: Any, name: str, width: int, scheme: str) -> Path:
    path = OUT / f"{name}-{width}-{scheme}.png"
    page.screenshot(path=str(path), full_page=True, animations="disabled")
    return path


def extras(browser: Any, base: str, width: int, height: int, scheme: str) -> list[Path]:
    """What the tour cannot reach by loading a URL: the skip link on focus, the team
    switcher open, a webhook refused and one added (its secret shown once), the 500
    page and the expired-form (CSRF) page."""
    context = browser.new_context(viewport={"width": width, "height": height}, color_scheme=scheme)
    shots = []
    try:
        page = context.new_page()
        log_in(page, base, "demo")
        page.keyboard.press("Tab")
        shots.append(shoot(page, "skip-link", width, scheme))

        # The team switcher, open, for a user in two teams.
        side, _ = Team.objects.get_or_create(slug="side", defaults={"name": "Side project"})
        membership = Membership.objects.create(team=side, user=User.objects.get(username="demo"))
        try:
            page.goto(f"{base}/")
            page.locator(".switcher summary").click()
            shots.append(shoot(page, "team-switcher", width, scheme))
        finally:
            membership.delete()

        # Settings › Webhooks: a refused URL on the form, then a webhook added and its
        # secret, shown once (the endpoint is deleted again: the next round's list is
        # the tour's).
        page.goto(f"{base}/settings/webhooks/")
        page.get_by_label("URL").fill("https://10.1.2.3/hooks/lens")
        page.get_by_role("button", name="Add webhook").click()
        page.wait_for_selector("[data-field-error]")
        page.evaluate("window.scrollTo(0, 0)")
        shots.append(shoot(page, "webhook-refused", width, scheme))
        page.get_by_label("URL").fill(SECRET_HOOK)
        page.locator("input[value='prompt.changed']").check()
        page.get_by_role("button", name="Add webhook").click()
        page.wait_for_selector("[data-secret]")
        shots.append(shoot(page, "webhook-secret", width, scheme))
        for made in Endpoint.objects.filter(url=SECRET_HOOK).select_related("team"):
            delete_endpoint(made.team, SYSTEM, made.pk)

        # The 500 page as Django sends it (no request, no context), styles from the server.
        crash = render_to_string("500.html")
        page.route(
            f"{base}/crash/",
            lambda route: route.fulfill(status=500, content_type="text/html", body=crash),
        )
        page.goto(f"{base}/crash/")
        shots.append(shoot(page, "server-error", width, scheme))

        # A form sent after its CSRF cookie went away: the expired-form page.
        context.clear_cookies()
        page.goto(f"{base}/accounts/login/")
        context.clear_cookies()
        page.get_by_label("Username").fill("demo")
        page.get_by_label("Password").fill("demo")
        page.get_by_role("button", name="Log in").click()
        page.wait_for_selector('[data-error-page="403-csrf"]')
        shots.append(shoot(page, "form-expired", width, scheme))
    finally:
        context.close()
    return shots


def main() -> int:
    from playwright.sync_api import sync_playwright

    call_command("migrate", verbosity=0)
    # The windows of the models the big agent runs on, as an operator serving their own
    # models adds them (the server runs in this process): its pages warn and alarm.
    settings.MODEL_CONTEXT_WINDOWS = {**settings.MODEL_CONTEXT_WINDOWS, **BIG_MODEL_WINDOWS}
    print("Seeding the demo and a big agent (40 sections × 50 entries, memories)…", flush=True)
    seed(big=True)
    tour: list[Stop] = stops()
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    server, base = serve()
    shots: list[Path] = []
    executable = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
            for width, height in SCREENS:
                for scheme in SCHEMES:
                    options = {"viewport": {"width": width, "height": height}}
                    for stop, page in walk(browser, base, tour, color_scheme=scheme, **options):
                        shots.append(shoot(page, stop.name, width, scheme))
                    shots += extras(browser, base, width, height, scheme)
                    print(f"  {width} px, {scheme}: done", flush=True)
            browser.close()
    finally:
        server.shutdown()
        shutil.rmtree(_scratch, ignore_errors=True)
    for shot in shots:
        print(shot.relative_to(Path.cwd()) if shot.is_relative_to(Path.cwd()) else shot)
    print(f"{len(shots)} screenshots in {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
