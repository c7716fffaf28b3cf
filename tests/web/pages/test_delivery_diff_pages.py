"""The delivery diff pages' bounds (SPEC §11, §9): however large the prompts, a diff page
draws its first lines, says how many more there are, and offers the whole unified diff
as a download, which only the team's members may read.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from lens.actors import SYSTEM
from lens.agents import get_agent
from lens.core.config import AgentConfig
from lens.core.diffs import PAGE_LINES, diff_lines
from lens.models import Agent, ApiToken, Team
from memory.composition import compose
from memory.configuring import store_agent
from memory.core.deliveries import DeliveryInput
from memory.deliveries.ledger import deliver, delivery_diff, live_diff
from memory.models import Delivery
from tests.api_calls import ApiClient
from tests.factories import create_agent, memory_config, remember, sample_config
from tests.pages import Dom, dom
from tests.samples import fastest

pytestmark = pytest.mark.django_db


def delivered(agent: Agent) -> Delivery:
    return deliver(agent, SYSTEM, DeliveryInput(session="s-1")).delivery


def drawn(page: Dom) -> list[str]:
    """The diff lines the page draws, as text."""
    return [e.text for e in page.elements if "dl" in (e.get("class") or "").split()]


def downloaded(response: Any) -> str:
    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response["Content-Disposition"].startswith("attachment; filename=")
    return bytes(response.content).decode("utf-8")


# --- the adversarial input: two prompts of 540,000 characters ---------------------------


def alternating(second: str) -> dict[str, Any]:
    """Six prose fields of 90,000 characters each: one-letter lines, ``a`` and ``second``
    in turn. Two such prompts differ in every other line: about 540,000 diff lines."""
    text = f"a\n{second}\n" * 22_500
    config = sample_config()
    config.update(persona=text, tone=text, objective=text, manual=text)
    config["capabilities"] = [{"name": f"Skill {n}", "description": text} for n in range(2)]
    return config


def test_a_huge_diff_draws_its_first_lines_and_offers_the_whole_one(
    team: Team, member_client: Client
) -> None:
    before = delivered(create_agent(team, "big", alternating("b")))
    agent = create_agent(team, "big", alternating("c"))
    after = delivered(agent)
    assert after.composition.chars > 540_000
    _token, raw = ApiToken.objects.issue(team)

    url = f"/deliveries/{after.id}/diff/"
    response, page_seconds = fastest(lambda: member_client.get(url), runs=2)
    answer, api_seconds = fastest(
        lambda: ApiClient(raw).get(f"/api/deliveries/{after.id}/diff"), runs=2
    )
    whole = answer.json()["diff"]
    assert whole.count("\n") > 540_000
    assert_bounded(member_client, response, whole, f"/deliveries/{after.id}/diff/download/")
    # The page costs what computing the diff costs, as the API does, plus a bounded
    # drawing. Unbounded, it took 8 times the API's time (and 19 MB).
    assert page_seconds < 2 * api_seconds + 0.5, (page_seconds, api_seconds)

    live = member_client.get(f"/deliveries/{before.id}/live/")
    whole = live_diff(before, compose(agent)).diff
    assert_bounded(member_client, live, whole, f"/deliveries/{before.id}/live/download/")


def assert_bounded(client: Client, response: Any, whole: str, download_url: str) -> None:
    """The page draws the diff's first lines, says how many more, links the download."""
    assert response.status_code == 200
    assert len(response.content) < 150_000  # the first PAGE_LINES lines: ~80 KB
    page = dom(response)
    assert drawn(page) == [text for _kind, text in diff_lines(whole)[:PAGE_LINES]]
    total = len(whole.splitlines())
    more = page.one("data-diff-more")
    assert more.get("data-diff-more") == str(total - PAGE_LINES)
    assert f"{total} lines" in more.squashed
    assert page.one("data-diff-download").get("href") == download_url
    assert downloaded(client.get(download_url)) == whole


# --- a small diff is drawn whole, as before ------------------------------------------


def test_a_small_diff_is_drawn_whole_with_a_download_link(
    member_client: Client, wren: Agent
) -> None:
    first = delivered(wren)
    remember(wren, "profile", "The user's name is Ada.", label="name")
    second = delivered(wren)
    diff = delivery_diff(wren.team, second.id, first.id).comparison.diff

    url = f"/deliveries/{second.id}/diff/?against={first.id}"
    page = dom(member_client.get(url))
    assert drawn(page) == diff.splitlines()
    assert page.all("data-diff-more") == []
    download = page.one("data-diff-download").get("href")
    assert download == f"/deliveries/{second.id}/diff/download/?against={first.id}"
    assert downloaded(member_client.get(download)) == diff


def test_an_unchanged_prompt_offers_nothing_to_download(member_client: Client, wren: Agent) -> None:
    delivered(wren)
    second = delivered(wren)
    page = dom(member_client.get(f"/deliveries/{second.id}/diff/"))
    assert page.all("data-same-prompt")
    assert page.all("data-diff-download") == []
    assert downloaded(member_client.get(f"/deliveries/{second.id}/diff/download/")) == ""


# --- who may download -----------------------------------------------------------------


def download_urls(delivery: Delivery) -> list[str]:
    return [
        f"/deliveries/{delivery.id}/diff/download/",
        f"/deliveries/{delivery.id}/live/download/",
    ]


def test_members_download_both_diffs(member_client: Client, wren: Agent) -> None:
    delivery = delivered(wren)
    remember(wren, "profile", "The user's name is Ada.", label="name")
    first, live = (downloaded(member_client.get(url)) for url in download_urls(delivery))
    assert first.startswith("--- (none)\n+++ delivery ")
    assert live.startswith(f"--- delivery {delivery.id}\n+++ live prompt\n")
    assert "+- **name**: The user's name is Ada.\n" in live


def test_strangers_get_404_on_the_downloads(stranger_client: Client, wren: Agent) -> None:
    for url in download_urls(delivered(wren)):
        assert stranger_client.get(url).status_code == 404, url


def test_anonymous_visitors_are_sent_to_log_in_from_the_downloads(
    client: Client, wren: Agent
) -> None:
    for url in download_urls(delivered(wren)):
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith("/accounts/login/")


@pytest.mark.parametrize("bad", ["nope", "0" * 18])
def test_unknown_deliveries_have_no_download(member_client: Client, bad: str) -> None:
    for url in (f"/deliveries/{bad}/diff/download/", f"/deliveries/{bad}/live/download/"):
        assert member_client.get(url).status_code == 404, url


def test_a_download_link_into_the_users_other_team_works(
    duo_client: Client, other_team: Team
) -> None:
    # duo works in acme; the link names a delivery of globex, duo's other team.
    gizmo = create_agent(other_team, "gizmo", memory_config(name="Gizmo"))
    earlier = delivered(gizmo)
    remember(gizmo, "profile", "Works nights.", label="shift")
    later = delivered(gizmo)
    duo_client.get("/?team=acme", headers={"Sec-Fetch-Site": "same-origin"})
    url = f"/deliveries/{later.id}/diff/download/?against={earlier.id}"
    assert "+- **shift**: Works nights.\n" in downloaded(duo_client.get(url))
    assert downloaded(duo_client.get(f"/deliveries/{earlier.id}/live/download/"))


def test_a_download_against_another_agents_delivery_is_404(
    member_client: Client, team: Team, wren: Agent
) -> None:
    mine = delivered(wren)
    theirs = delivered(create_agent(team, "other"))
    response = member_client.get(f"/deliveries/{mine.id}/diff/download/?against={theirs.id}")
    assert response.status_code == 404


# --- why it changed -----------------------------------------------------------------------


def causes_on(client: Client, delivery: Delivery) -> list[Any]:
    page = dom(client.get(f"/deliveries/{delivery.id}/diff/"))
    return [e for e in page.elements if e.get("data-cause")]


def test_the_diff_page_lists_why_the_prompt_changed(member_client: Client, wren: Agent) -> None:
    first = delivered(wren)
    saved = remember(wren, "profile", "Doug", label="name")
    store_agent(wren.team, "wren", AgentConfig.model_validate(memory_config(tone="Brisk.")))
    second = delivered(get_agent(wren.team, "wren"))
    found = causes_on(member_client, second)
    assert [
        (e.get("data-cause"), e.get("data-memory-id") or e.get("data-revision")) for e in found
    ] == [
        ("memory", saved),
        ("revision", "2"),
    ]
    html = member_client.get(f"/deliveries/{second.id}/diff/").content.decode()
    assert 'href="/agents/wren/revisions/2/"' in html
    assert f'href="/memories/{saved}/"' in html
    assert "Tone changed" in html
    assert first


def test_the_causes_cost_the_same_queries_however_many(member_client: Client, wren: Agent) -> None:
    def queries_for(saves: int) -> int:
        delivered(get_agent(wren.team, "wren"))
        for n in range(saves):
            remember(wren, "profile", f"Fact {n} of {saves}", label=f"f{n}-{saves}")
        second = delivered(get_agent(wren.team, "wren"))
        with CaptureQueriesContext(connection) as captured:
            assert member_client.get(f"/deliveries/{second.id}/diff/").status_code == 200
        return len(captured.captured_queries)

    queries_for(0)  # the first page of a session reads what later ones have cached
    assert queries_for(2) == queries_for(30)
