"""The prompt against its model's context window on the pages: the lens, a delivery's
page and each timeline row say "N of W tokens · P%", warn from half the window and
alarm from 90% in words (not by colour alone), and say when the window is unknown."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any
from urllib.parse import quote

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from lens.actors import SYSTEM
from lens.core.context_windows import ContextFigure
from lens.models import Agent, Team
from memory.composition import compose
from memory.core.deliveries import DeliveryInput
from memory.deliveries.ledger import deliver
from memory.models import Delivery
from tests.factories import create_agent, sample_config
from tests.pages import Dom, Element, dom

pytestmark = pytest.mark.django_db

MODEL = "team-llama-3.1-8b"


@pytest.fixture
def sized(team: Team) -> Agent:
    """Wren, declared to run on a model only the operator's table knows."""
    return create_agent(team, "wren", {**sample_config(), "model": MODEL})


def tokens_of(agent: Agent) -> int:
    return compose(agent).tokens.total


def delivered(agent: Agent, model: str | None) -> Delivery:
    return deliver(agent, SYSTEM, DeliveryInput(session="s-1", model=model)).delivery


def figure(page: Dom) -> Element:
    return page.one("data-context-window")


def lens(client: Client, query: str = "") -> Element:
    return figure(dom(client.get(f"/agents/wren/{query}")))


# Windows for a prompt of ``t`` tokens, on both sides of each threshold.
EDGES: list[tuple[str, Callable[[int], int], str]] = [
    ("just under half", lambda t: 2 * t + 1, "ok"),
    ("exactly half", lambda t: 2 * t, "warning"),
    ("just under 90%", lambda t: 10 * t // 9 + 1, "warning"),
    ("90% or a hair over", lambda t: 10 * t // 9, "alarm"),
    ("exactly full", lambda t: t, "alarm"),
    ("too small", lambda t: t - 1, "alarm"),
]


def said(element: Element) -> str:
    return element.squashed


def check_figure(element: Element, tokens: int, window: int, level: str, model: str) -> None:
    expected = ContextFigure(tokens=tokens, model=model, window=window)
    assert expected.level == level  # the edge is where the test says it is
    assert element.get("data-context-level") == level
    assert element.get("data-context-tokens") == str(tokens)
    assert element.get("data-context-limit") == str(window)
    assert element.get("data-context-model") == model
    text = said(element)
    assert f"{tokens:,} of {window:,} tokens · {expected.percent} of the context window" in text
    assert model in text
    assert ("Warning:" in text) is (level == "warning")
    assert ("Alarm:" in text) is (level == "alarm")
    assert ("larger than the context window" in text) is (tokens > window)


@pytest.mark.parametrize(("edge", "window_of", "level"), EDGES, ids=[e[0] for e in EDGES])
def test_the_lens_warns_from_half_the_window_and_alarms_from_ninety_percent(
    member_client: Client,
    sized: Agent,
    settings: Any,
    edge: str,
    window_of: Callable[[int], int],
    level: str,
) -> None:
    tokens = tokens_of(sized)
    window = window_of(tokens)
    settings.MODEL_CONTEXT_WINDOWS = {MODEL: window}
    element = lens(member_client)
    check_figure(element, tokens, window, level, MODEL)
    # The meter turns where the words do: an HTML meter's low region is value < low,
    # its high region value > high.
    (meter,) = [e for e in element.descendants() if e.tag == "meter"]
    assert meter.get("aria-labelledby") == "context-words"
    assert (meter.get("max"), meter.get("value")) == (str(window), str(tokens))
    low, high = int(str(meter.get("low"))), int(str(meter.get("high")))
    assert (tokens >= low) is (level != "ok")
    assert (tokens > high) is (level == "alarm")


def test_the_lens_shows_a_known_models_figure_from_the_built_in_table(
    member_client: Client, team: Team
) -> None:
    agent = create_agent(team, "wren", {**sample_config(), "model": "gpt-4o-2024-08-06"})
    tokens = tokens_of(agent)
    check_figure(lens(member_client), tokens, 128_000, "ok", "gpt-4o-2024-08-06")


def test_an_unknown_model_says_how_to_add_its_window(member_client: Client, sized: Agent) -> None:
    element = lens(member_client)
    assert element.get("data-context-level") == "unknown"
    assert "data-context-limit" not in element.attrs
    assert said(element) == (f"Context window unknown for {MODEL}; set MODEL_CONTEXT_WINDOWS.")


def test_an_agent_without_a_model_is_asked_to_declare_one(
    member_client: Client, team: Team
) -> None:
    create_agent(team)
    element = lens(member_client)
    assert element.get("data-context-level") == "none"
    assert "No model declared" in said(element)
    assert "Warning" not in said(element)


def test_the_lens_as_of_a_moment_uses_the_model_declared_then(
    member_client: Client, team: Team, settings: Any
) -> None:
    config = sample_config()
    agent = create_agent(team, "wren", {**config, "model": "small-model"})
    then: datetime = timezone.now()
    create_agent(team, "wren", {**config, "model": "big-model"})
    tokens = tokens_of(agent)
    settings.MODEL_CONTEXT_WINDOWS = {"small-model": tokens, "big-model": tokens * 100}
    assert lens(member_client).get("data-context-level") == "ok"
    past = lens(member_client, f"?as_of={quote(then.isoformat())}")
    assert (past.get("data-context-model"), past.get("data-context-level")) == (
        "small-model",
        "alarm",
    )


# --- deliveries -----------------------------------------------------------------------


@pytest.mark.parametrize(("edge", "window_of", "level"), EDGES, ids=[e[0] for e in EDGES])
def test_a_delivery_is_measured_against_the_model_it_named(
    member_client: Client,
    sized: Agent,
    settings: Any,
    edge: str,
    window_of: Callable[[int], int],
    level: str,
) -> None:
    delivery = delivered(sized, "runtime-model-2")
    tokens = delivery.composition.tokens
    window = window_of(tokens)
    # The agent's own model would say otherwise: the delivery's decides.
    settings.MODEL_CONTEXT_WINDOWS = {"runtime-model": window, MODEL: 10**8}
    check_figure(
        figure(dom(member_client.get(f"/deliveries/{delivery.id}/"))),
        tokens,
        window,
        level,
        "runtime-model-2",
    )
    row = dom(member_client.get("/agents/wren/deliveries/")).one("data-delivery-id", delivery.id)
    (cell,) = [e for e in row.descendants() if "data-context-window" in e.attrs]
    assert cell.get("data-context-level") == level
    text = said(cell)
    percent = ContextFigure(tokens=tokens, model="m", window=window).percent
    assert f"{percent} of the runtime-model-2 window" in text
    assert text.startswith({"ok": percent, "warning": "Warning:", "alarm": "Alarm:"}[level])


def test_a_delivery_that_named_no_model_is_measured_against_the_agents_and_says_so(
    member_client: Client, sized: Agent, settings: Any
) -> None:
    delivery = delivered(sized, None)
    tokens = delivery.composition.tokens
    settings.MODEL_CONTEXT_WINDOWS = {MODEL: tokens * 4}
    detail = figure(dom(member_client.get(f"/deliveries/{delivery.id}/")))
    check_figure(detail, tokens, tokens * 4, "ok", MODEL)
    assert "(the agent's declared model: this delivery named none)" in said(detail)
    row = dom(member_client.get("/agents/wren/deliveries/")).one("data-delivery-id", delivery.id)
    (cell,) = [e for e in row.descendants() if "data-context-window" in e.attrs]
    assert said(cell) == f"25% of the {MODEL} window (the agent's model)"


def test_deliveries_without_any_model_or_with_an_unknown_one_say_so(
    member_client: Client, team: Team
) -> None:
    agent = create_agent(team)
    anonymous = delivered(agent, None)
    unknown = delivered(agent, "house-model")
    timeline = dom(member_client.get("/agents/wren/deliveries/"))
    cells = {
        row.get("data-delivery-id"): said(
            next(e for e in row.descendants() if "data-context-window" in e.attrs)
        )
        for row in timeline.all("data-delivery-id", tag="tr")
    }
    assert cells == {anonymous.id: "no model", unknown.id: "window unknown for house-model"}
    detail = figure(dom(member_client.get(f"/deliveries/{unknown.id}/")))
    assert said(detail) == "Context window unknown for house-model; set MODEL_CONTEXT_WINDOWS."


def test_the_figures_read_nothing_more_however_many_rows_and_models(
    member_client: Client, sized: Agent
) -> None:
    delivered(sized, "gpt-4o")
    member_client.get("/agents/wren/deliveries/")  # warm the caches
    with CaptureQueriesContext(connection) as one_row:
        member_client.get("/agents/wren/deliveries/")
    for model in (None, "house-model", "gemini-1.5-pro"):
        delivered(sized, model)
    with CaptureQueriesContext(connection) as four_rows:
        page = dom(member_client.get("/agents/wren/deliveries/"))
    assert len(page.all("data-context-window")) == 4
    assert len(four_rows.captured_queries) == len(one_row.captured_queries)
