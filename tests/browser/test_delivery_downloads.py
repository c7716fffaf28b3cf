"""The delivery diff's download in the real Chromium (SPEC §11): the link on the diff
page saves the whole unified diff as a text file, the very diff the API answers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.browser.test_deliveries import deliver
from tests.browser.test_memory import bearer, save, set_up
from tests.factories import login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_diff_page_downloads_the_whole_diff(live_server: Any, page: Any) -> None:
    base, raw = set_up(live_server)
    deliver(page, base, raw, "sess-a")
    save(page, base, raw, {"kind": "profile", "content": "Lyon", "label": "city"})
    later = deliver(page, base, raw, "sess-b")
    api = page.request.get(
        f"{base}/api/deliveries/{later['delivery_id']}/diff", headers=bearer(raw)
    )
    expected = api.json()["diff"]

    login(page, base, "mira")
    page.goto(f"{base}/deliveries/{later['delivery_id']}/diff/")
    with page.expect_download() as caught:
        page.get_by_role("link", name="Download this diff").click()
    download = caught.value
    assert download.suggested_filename.endswith(f"-{later['delivery_id']}.diff")
    assert Path(download.path()).read_text(encoding="utf-8") == expected
