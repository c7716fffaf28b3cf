"""The prompt-cache figures a delivery is recorded with (SPEC §17): over random edits of
an agent between deliveries, each delivery's stored figures equal an independent count
against the delivery before it — both delivered prompts tokenised by tiktoken directly,
their code points compared one by one — whether the previous prompt's ids were still
cached or had to be read back from its stored composition.
"""

from __future__ import annotations

import copy
import threading
from typing import Any

import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lens.actors import SYSTEM, Actor
from lens.agents import get_agent
from lens.core.cache_prefix import CachePrefix, FirstChange
from lens.core.config import AgentConfig
from lens.core.token_counts import _counter, load_encoding
from lens.models import Agent, Team
from memory.configuring import store_agent
from memory.core.deliveries import DeliveryInput
from memory.deliveries import cache_figures
from memory.deliveries.cache_figures import figures_of
from memory.deliveries.ledger import composition_of, deliver
from memory.erasure import erase_memory
from memory.models import Delivery
from tests.factories import create_agent, memory_config, race, remember
from tests.samples import expected_change, leading_equal

pytestmark = pytest.mark.django_db

_encoding = load_encoding()  # tiktoken itself, not the product's cache


def config_with(sections: list[dict[str, Any]], persona: str) -> AgentConfig:
    config = memory_config()
    config["persona"] = persona
    config["background"]["sections"] = sections
    return AgentConfig.model_validate(config)


def first_sections() -> list[dict[str, Any]]:
    base: list[dict[str, Any]] = copy.deepcopy(memory_config()["background"]["sections"])
    return base + [
        {
            "id": f"notes_{i}",
            "title": f"Notes {i}",
            "entries": [{"key": f"k{e}", "value": f"value {i}.{e}"} for e in range(3)],
        }
        for i in range(4)
    ]


def delivered_in_order(agent: Agent) -> list[Delivery]:
    return list(
        Delivery.objects.filter(agent=agent).select_related("composition").order_by("delivered_at")
    )


def assert_figures_are_independent_counts(agent: Agent) -> None:
    """Every delivery of ``agent`` against the one before it in the timeline, as stored
    (a redacted one was counted before its redaction: only the next is checked)."""
    previous_text: str | None = None
    for delivery in delivered_in_order(agent):
        composition = composition_of(delivery.composition)
        text = composition.prompt.text
        ids = _encoding.encode_ordinary(text)
        figures = figures_of(delivery)
        assert figures is not None
        if delivery.composition.redacted_at is not None:
            previous_text = text
            continue
        assert figures.total_tokens == len(ids) == delivery.composition.tokens
        if previous_text is None:
            assert figures == CachePrefix(0, 0, len(ids), None)
        else:
            chars = leading_equal(previous_text, text)
            assert figures.prefix_chars == chars
            assert figures.prefix_tokens == leading_equal(
                _encoding.encode_ordinary(previous_text), ids
            )
            if previous_text == text:
                assert figures.first_change is None
                assert figures.prefix_tokens == figures.total_tokens
            else:
                assert figures.first_change == expected_change(
                    composition.prompt.sections, composition.background, chars
                )
        previous_text = text


EDITS = ("value", "add", "remove", "move", "persona", "memory", "nothing")
STEP = st.tuples(st.sampled_from(EDITS), st.integers(0, 9), st.booleans())


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(steps=st.lists(STEP, min_size=1, max_size=6))
def test_stored_figures_equal_an_independent_count_over_random_edits(
    team: Team, steps: list[tuple[str, int, bool]]
) -> None:
    # Each example starts from nothing: its writes are rolled back at the end.
    with transaction.atomic():
        sections, persona = first_sections(), "You are Wren."
        agent = store_agent(team, "probe", config_with(sections, persona))[0]
        deliver(agent, SYSTEM)
        for number, (edit, pick, forget) in enumerate(steps):
            if edit == "value":
                section = sections[1 + pick % (len(sections) - 1)]
                if section.get("entries"):
                    section["entries"][0]["value"] = f"changed {number}"
            elif edit == "add":
                sections.insert(
                    1 + pick % len(sections),
                    {
                        "id": f"added_{number}",
                        "title": f"Added {number}",
                        "entries": [{"key": "k", "value": f"v{number}"}],
                    },
                )
            elif edit == "remove" and len(sections) > 2:
                del sections[2 + pick % (len(sections) - 2)]
            elif edit == "move" and len(sections) > 2:
                sections.insert(pick % len(sections), sections.pop(2 + pick % (len(sections) - 2)))
            elif edit == "persona":
                persona = f"You are Wren, take {number}."
            elif edit == "memory":
                remember(agent, "profile", f"Fact {number}", label=f"fact{number}")
            if edit in ("value", "add", "remove", "move", "persona"):
                agent = store_agent(team, "probe", config_with(sections, persona))[0]
            if forget:
                _counter.forget()  # as in another process: the previous prompt is read back
            deliver(get_agent(team, "probe"), SYSTEM)
        assert_figures_are_independent_counts(agent)
        transaction.set_rollback(True)


def test_the_first_delivery_shares_nothing_and_an_unchanged_one_everything(wren: Agent) -> None:
    first = deliver(wren, SYSTEM).delivery
    again = deliver(wren, SYSTEM).delivery
    tokens = first.composition.tokens
    assert figures_of(first) == CachePrefix(0, 0, tokens, None)
    text = composition_of(again.composition).prompt.text
    assert figures_of(again) == CachePrefix(tokens, len(text), tokens, None)


def test_a_memory_names_the_background_section_it_landed_in(wren: Agent) -> None:
    deliver(wren, SYSTEM)
    remember(wren, "profile", "The user's name is Ada.", label="name")
    figures = figures_of(deliver(get_agent(wren.team, "wren"), SYSTEM).delivery)
    assert figures is not None
    assert figures.first_change == FirstChange("Context", "user_profile")
    assert 0 < figures.prefix_tokens < figures.total_tokens


def test_after_an_erasure_the_next_delivery_is_measured_against_the_redacted_prompt(
    wren: Agent,
) -> None:
    erased = remember(wren, "profile", "The user's name is Ada.", label="name")
    remember(wren, "profile", "The user lives in Lyon.", label="city")  # the line after
    deliver(get_agent(wren.team, "wren"), SYSTEM)  # its ids are cached in this process
    erase_memory(erased, Actor(label="dpo"), "request #1")
    later = deliver(get_agent(wren.team, "wren"), SYSTEM).delivery
    # The stored previous prompt reads "[erased]" where the memory's line was: that is
    # the prompt the figures compare with, although this process still holds the other.
    assert_figures_are_independent_counts(wren)
    assert figures_of(later) is not None


def test_with_the_figures_switched_off_a_delivery_is_recorded_without_them(
    wren: Agent, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cache_figures, "ENABLED", False)
    delivery = deliver(wren, SYSTEM).delivery
    assert figures_of(Delivery.objects.select_related("composition").get(pk=delivery.pk)) is None


@pytest.mark.django_db(transaction=True)
def test_deliveries_racing_changes_are_each_measured_against_the_one_before(
    team: Team,
) -> None:
    agent = create_agent(team, "wren", memory_config())
    deliver(agent, SYSTEM)

    def act(n: int) -> None:
        if n % 2:
            remember(agent, "profile", f"Fact {n}", label=f"fact{n}")
        else:
            deliver(get_agent(team, "wren"), Actor(label="runtime"), DeliveryInput(session=f"s{n}"))

    race(8, act)
    assert Delivery.objects.filter(agent=agent).count() == 5
    assert_figures_are_independent_counts(agent)


@pytest.mark.django_db(transaction=True)
def test_two_deliveries_at_once_never_both_take_the_same_previous(
    team: Team, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both deliveries measure at the same moment if they can: then, without the
    timeline's lock, both would compare with the delivery before them. With it, the
    second waits for the first to commit and compares with it. (Their composition is
    stored already, so storing it makes neither wait for the other.)"""
    agent = store_agent(team, "probe", config_with(first_sections(), "You are Wren."))[0]
    deliver(agent, SYSTEM)
    store_agent(team, "probe", config_with(first_sections(), "You are Wren, kind."))
    deliver(get_agent(team, "probe"), SYSTEM)
    store_agent(team, "probe", config_with(first_sections(), "You are Wren."))
    arrived = [threading.Event(), threading.Event()]
    measure = cache_figures.measure

    def meet(*args: Any) -> CachePrefix:
        mine = int(threading.current_thread().name)
        arrived[mine].set()
        arrived[1 - mine].wait(timeout=1.5)  # the other one, if it can get here
        return measure(*args)

    monkeypatch.setattr(cache_figures, "measure", meet)

    def act(n: int) -> None:
        threading.current_thread().name = str(n)
        deliver(get_agent(team, "probe"), Actor(label="runtime"), DeliveryInput(session=f"s{n}"))

    race(2, act)
    first, _other, second, third = delivered_in_order(agent)
    assert first.composition_id == second.composition_id == third.composition_id
    assert figures_of(third) == CachePrefix(
        third.composition.tokens,
        len(composition_of(third.composition).prompt.text),
        third.composition.tokens,
        None,
    )
    assert_figures_are_independent_counts(agent)
