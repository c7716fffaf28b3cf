"""Every page fits a 390-pixel phone without scrolling sideways, and a 1440-pixel desktop
(SPEC §9), with the demo's data: wide tables scroll inside their card, never the page.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.core.management import call_command

from kvstore.models import Key
from memory.models import Delivery, MemoryRecord
from tests.factories import login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def demo_pages() -> list[str]:
    call_command("seed_demo", "--force", verbosity=0)
    wren_deliveries = list(
        Delivery.objects.filter(agent__slug="wren")
        .order_by("delivered_at")
        .values_list("pk", flat=True)
    )
    memory = MemoryRecord.objects.filter(agent__slug="wren").values_list("pk", flat=True)[0]
    key = Key.objects.values_list("key", flat=True)[0]
    return [
        "/",
        "/agents/wren/",
        "/agents/wren/try/?recall=coffee",
        "/agents/sentinel/",
        "/approvals/",
        "/memories/",
        "/memories/?q=coffee",
        f"/memories/{memory}/",
        "/kv/",
        f"/kv/{key}/",
        "/agents/wren/deliveries/",
        f"/deliveries/{wren_deliveries[2]}/",
        f"/deliveries/{wren_deliveries[3]}/diff/",
        f"/deliveries/{wren_deliveries[-1]}/live/",
    ]


@pytest.mark.parametrize("width", [390, 1440])
def test_every_page_fits_the_screen(live_server: Any, browser: Any, width: int) -> None:
    pages = demo_pages()
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    try:
        login(page, live_server.url, "demo", "demo")
        too_wide = {}
        for path in pages:
            response = page.goto(f"{live_server.url}{path}")
            assert response is not None
            assert response.status == 200, path
            scroll_width = page.evaluate("document.documentElement.scrollWidth")
            if scroll_width > width:
                too_wide[path] = scroll_width
        assert too_wide == {}
    finally:
        context.close()
