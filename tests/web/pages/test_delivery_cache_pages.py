"""The prompt-cache figures on the delivery pages (SPEC §17): each timeline row's line
("12,340 of 14,002 tokens cached · changed in Background › Preferences"), the chart of
the newest deliveries' cached share, and the figure on a delivery's own page.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from lens.actors import SYSTEM
from lens.agents import config_of, get_agent
from lens.core.provider_caches import openai_cached
from lens.core.token_counts import count_tokens
from lens.models import Agent
from memory.configuring import store_agent
from memory.deliveries.ledger import composition_of, deliver
from memory.models import Delivery
from tests.factories import remember
from tests.pages import Dom, dom

pytestmark = pytest.mark.django_db


def delivered(agent: Agent) -> Delivery:
    return deliver(get_agent(agent.team, agent.slug), SYSTEM).delivery


def timeline(client: Client, agent: Agent, query: str = "") -> Dom:
    return dom(client.get(f"/agents/{agent.slug}/deliveries/{query}"))


def cache_cells(page: Dom) -> dict[str, str]:
    """Each timeline row's prompt-cache cell, by delivery id."""
    cells = {}
    for cell in page.all("data-cache", tag="td"):
        row = cell.ancestor("tr")
        assert row is not None
        cells[str(row.get("data-delivery-id"))] = cell.squashed
    return cells


def test_each_row_says_how_much_was_cached_and_where_it_changed(
    member_client: Client, wren: Agent
) -> None:
    first = delivered(wren)
    same = delivered(wren)
    remember(wren, "profile", "The user's name is Ada.", label="name")
    changed = delivered(wren)
    same.refresh_from_db()
    tokens = same.composition.tokens
    cells = cache_cells(timeline(member_client, wren))
    assert cells[first.id] == f"0 of {tokens:,} tokens cached"
    assert cells[same.id] == f"{tokens:,} of {tokens:,} tokens cached"
    cached = changed.cache_prefix_tokens
    assert cached is not None
    assert 0 < cached < changed.composition.tokens
    assert cells[changed.id] == (
        f"{cached:,} of {changed.composition.tokens:,} tokens cached"
        " · changed in Background › About the User"
    )


def test_a_change_outside_the_background_names_its_section(
    member_client: Client, wren: Agent
) -> None:
    delivered(wren)
    config = config_of(get_agent(wren.team, wren.slug))
    store_agent(wren.team, wren.slug, config.model_copy(update={"persona": "Kinder."}))
    changed = delivered(wren)
    assert cache_cells(timeline(member_client, wren))[changed.id].endswith(" · changed in Persona")


def test_a_delivery_recorded_before_the_figures_shows_a_dash(
    member_client: Client, wren: Agent
) -> None:
    old = delivered(wren)
    Delivery.objects.filter(pk=old.pk).update(cache_prefix_tokens=None, cache_prefix_chars=None)
    page = timeline(member_client, wren)
    assert cache_cells(page)[old.id] == "—"
    detail = dom(member_client.get(f"/deliveries/{old.id}/"))
    assert detail.one("data-cache").squashed == "—"
    assert "not counted" in page.one("data-cache-chart").squashed


def test_the_chart_draws_the_newest_fifty_deliveries_as_an_image(
    member_client: Client, wren: Agent
) -> None:
    template = delivered(wren)
    Delivery.objects.bulk_create(
        Delivery(
            agent=wren,
            composition_id=template.composition_id,
            delivered_at=template.delivered_at - timedelta(seconds=i + 1),
            cache_prefix_tokens=template.composition.tokens // (i % 4 + 1),
            cache_prefix_chars=0,
        )
        for i in range(70)
    )
    page = timeline(member_client, wren)
    chart = page.one("data-cache-chart")
    (svg,) = [e for e in chart.descendants() if e.tag == "svg"]
    assert svg.get("role") == "img"
    (title,) = [e for e in svg.descendants() if e.get("id") == svg.get("aria-labelledby")]
    assert title.tag == "title"
    assert title.text.startswith("Cached share of the prompt over the last 50 deliveries")
    assert "newest 0%" in title.text  # the first delivery shared nothing
    bars = [e for e in svg.descendants() if e.tag == "rect"]
    assert len(bars) == 50
    # Oldest on the left, the newest (the first real delivery: 0 cached) on the right.
    assert [float(str(bar.get("x"))) for bar in bars] == sorted(
        float(str(bar.get("x"))) for bar in bars
    )
    assert "0 of" in bars[-1].text
    assert all(bar.get("class") == "cache-bar" for bar in bars)


def test_the_delivery_page_shows_the_figure_and_both_providers_rules(
    member_client: Client, wren: Agent
) -> None:
    delivered(wren)
    remember(wren, "profile", "The user's name is Ada.", label="name")
    changed = delivered(wren)
    page = dom(member_client.get(f"/deliveries/{changed.id}/"))
    figure = page.one("data-cache")
    cached = changed.cache_prefix_tokens or 0
    assert figure.squashed.startswith(
        f"{cached:,} of {changed.composition.tokens:,} tokens cached"
        " · changed in Background › About the User"
    )
    providers = page.one("data-cache-providers").squashed
    assert f"OpenAI would bill {openai_cached(cached):,} as cached" in providers
    # Wren's authored sections are under Anthropic's 1,024-token minimum: nothing served
    # until the whole prompt repeats.
    authored = composition_of(changed.composition).prompt.text.index("## Context")
    assert count_tokens(composition_of(changed.composition).prompt.text[:authored]) < 1024
    assert "Anthropic would serve 0 from its cache" in providers


def test_strangers_and_anonymous_visitors_see_no_figures(
    stranger_client: Client, client: Client, wren: Agent
) -> None:
    delivery = delivered(wren)
    for url in (f"/agents/{wren.slug}/deliveries/", f"/deliveries/{delivery.id}/"):
        assert stranger_client.get(url).status_code == 404
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith("/accounts/login/")


def _queries(client: Client, url: str) -> int:
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(url).status_code == 200
    return len(ctx.captured_queries)


def test_the_timeline_reads_as_many_queries_with_many_deliveries(
    member_client: Client, wren: Agent, django_assert_max_num_queries: Callable[..., Any]
) -> None:
    delivered(wren)
    remember(wren, "profile", "The user's name is Ada.", label="name")
    delivered(wren)
    url = f"/agents/{wren.slug}/deliveries/"
    few = _queries(member_client, url)
    for n in range(60):
        remember(wren, "profile", f"Fact {n}.", label=f"fact{n}")
        delivered(wren)
    with django_assert_max_num_queries(few):
        page = timeline(member_client, wren)
    assert len(cache_cells(page)) == 50
    assert all(
        "changed in Background › About the User" in c for c in list(cache_cells(page).values())[:-1]
    )
