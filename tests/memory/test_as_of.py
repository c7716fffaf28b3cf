"""The composition as of any moment (SPEC §14 "As of"): for every recorded delivery, the
composition as of its time is its prompt, whatever history of saves, decisions,
supersessions, revisions and deliveries came before and after (hypothesis, on the real
database); and through the API, ``as_of`` reads the revision and the memories then.
"""

from __future__ import annotations

import itertools
import json
from datetime import datetime, timedelta
from typing import Any
from unittest import mock

import pytest
from django.utils import timezone
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from lens.actors import Actor
from lens.agents import get_agent
from lens.core.config import AgentConfig
from lens.models import Agent, Team
from memory.as_of import compose_as_of, statuses_at
from memory.configuring import store_agent
from memory.core.records import MemoryInput
from memory.decisions import decide, reopen, revoke
from memory.deliveries.ledger import composition_data, deliver
from memory.models import Delivery, Promotion, PromotionStatus
from memory.saving import Saved, save_memory
from memory.validity import change_validity
from tests.api_calls import ApiClient, api_prompt_text, assert_error
from tests.factories import memory_config

pytestmark = pytest.mark.django_db

REVIEWER = Actor(label="alice")
OPS = (
    "fact",
    "preference",
    "approve",
    "reject",
    "revoke",
    "reopen",
    "supersede",
    "revise",
    "deliver",
)
_agents = itertools.count()


class History:
    """One agent and the operations a random history applies to it."""

    def __init__(self, team: Team) -> None:
        self.slug = f"h{next(_agents)}"
        self.config = memory_config()
        store_agent(team, self.slug, AgentConfig.model_validate(self.config))
        self.team = team
        self.saved: list[tuple[str, str]] = []  # (record id, label)

    def agent(self) -> Agent:
        return get_agent(self.team, self.slug)

    def status(self, wanted: str) -> list[str]:
        ids = [rid for rid, _label in self.saved]
        return list(
            Promotion.objects.filter(record_id__in=ids, status=wanted)
            .order_by("record__created_at")
            .values_list("record_id", flat=True)
        )

    def pick(self, wanted: str, n: int) -> str | None:
        found = self.status(wanted)
        return found[n % len(found)] if found else None

    def save(self, kind: str, n: int, supersedes: str | None = None, label: str = "") -> None:
        label = label or f"{kind[:4]}{n}-{len(self.saved)}"
        data = MemoryInput(
            kind=kind, content=f"{kind} {n} #{len(self.saved)}", label=label, supersedes=supersedes
        )
        result = save_memory(self.agent(), data, Actor(label="runtime"))
        if isinstance(result, Saved):
            self.saved.append((result.id, label))

    def apply(self, op: str, n: int) -> None:
        if op in ("fact", "preference"):
            self.save("profile" if op == "fact" else "preference", n)
        elif op in ("approve", "reject") and (rid := self.pick(PromotionStatus.PENDING, n)):
            decide(rid, op == "approve", REVIEWER)
        elif op == "revoke" and (rid := self.pick(PromotionStatus.APPROVED, n)):
            revoke(rid, REVIEWER)
        elif op == "reopen" and (rid := self.pick(PromotionStatus.REJECTED, n)):
            reopen(rid, REVIEWER)
        elif op == "supersede" and (rid := self.pick(PromotionStatus.APPROVED, n)):
            label = dict(self.saved)[rid]
            kind = "profile" if label.startswith("prof") else "preference"
            self.save(kind, n, supersedes=rid, label=label)
        elif op == "revise":
            self.config = {**self.config, "persona": f"You are Wren, take {n}."}
            if n % 2:
                profile = self.config["background"]["sections"][0]
                profile["entries"] = [{"key": "timezone", "value": f"Zone {n}"}]
            store_agent(
                self.team,
                self.slug,
                AgentConfig.model_validate(json.loads(json.dumps(self.config))),
            )
        elif op == "deliver":
            deliver(self.agent(), Actor(label="runtime"))


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 20)), min_size=1, max_size=30))
def test_as_of_every_delivery_is_its_prompt(team: Team, steps: list[tuple[str, int]]) -> None:
    history = History(team)
    for op, n in [*steps, ("deliver", 0)]:
        history.apply(op, n)
    agent = history.agent()
    for delivery in Delivery.objects.filter(agent=agent).select_related("composition"):
        delivered = composition_data(delivery.composition)
        then = compose_as_of(agent, delivery.delivered_at)
        assert json.loads(then.model_dump_json())["prompt"] == delivered["prompt"]
        assert json.loads(then.model_dump_json())["report"] == delivered["report"]


def test_a_status_is_what_the_last_event_left(team: Team) -> None:
    history = History(team)
    history.apply("preference", 1)
    (rid, _label) = history.saved[0]
    saved_at = Promotion.objects.get(record_id=rid).promoted_at
    decide(rid, True, REVIEWER)
    revoke(rid, REVIEWER)
    agent = history.agent()
    assert statuses_at(agent, saved_at - timedelta(microseconds=1)) == {}
    assert statuses_at(agent, saved_at) == {rid: "pending"}
    assert statuses_at(agent, saved_at + timedelta(days=1)) == {rid: "revoked"}


def test_the_api_composes_as_of_a_moment(api: ApiClient, team: Team) -> None:
    config: dict[str, Any] = memory_config()
    api.put("/api/agents/wren", config)
    first = api.post("/api/agents/wren/deliveries", {}).json()
    api.put("/api/agents/wren", {**config, "persona": "You are Wren, briefly."})
    then = api.get(f"/api/agents/wren/composition?as_of={first['delivered_at']}").json()
    assert api_prompt_text(then) == api_prompt_text(first["composition"])
    now = api.get("/api/agents/wren/composition").json()
    assert "You are Wren, briefly." in api_prompt_text(now)
    later = api.get("/api/agents/wren/composition?as_of=9999-12-31T00:00:00Z").json()
    assert api_prompt_text(later) == api_prompt_text(now)


def test_as_of_before_the_agent_or_not_a_time_is_refused(api: ApiClient, team: Team) -> None:
    api.put("/api/agents/wren", memory_config())
    assert_error(
        api.get("/api/agents/wren/composition?as_of=2000-01-01T00:00:00Z"), 404, "agent_not_found"
    )
    for bad in ("yesterday", "1700000000", "2026-13-01T00:00:00Z"):
        assert_error(api.get(f"/api/agents/wren/composition?as_of={bad}"), 422, "invalid_request")


# --- with time passing (SPEC §19.1, §19.2) --------------------------------------------


class Clock:
    """The time every ``timezone.now()`` reads while a history runs: it moves only
    when told to, and only forward (across examples too, as the database's rows do)."""

    def __init__(self) -> None:
        self.at = timezone.now().replace(microsecond=0)

    def now(self) -> datetime:
        return self.at

    def advance(self, delta: timedelta) -> None:
        self.at += delta


_clock = Clock()

TIMED_OPS = (
    *OPS,
    "until",
    "sight",
    "sight-until",
    "wait",
    "window",
)


class TimedHistory(History):
    """A history in which time passes between operations: memories saved with validity
    windows, windows moved or cleared by a reviewer, and saves of the same content in
    several sessions (sightings, when the preferences section is earned)."""

    def __init__(self, team: Team, preferences: str) -> None:
        self.slug = f"h{next(_agents)}"
        self.config = memory_config(preferences)
        store_agent(team, self.slug, AgentConfig.model_validate(self.config))
        self.team = team
        self.saved = []

    def save_until(self, kind: str, n: int, content: str, label: str, hours: int | None) -> None:
        until = None if hours is None else _clock.now() + timedelta(hours=hours)
        data = MemoryInput(
            kind=kind, content=content, label=label, session=f"s{n // 2 % 4}", valid_until=until
        )
        result = save_memory(self.agent(), data, Actor(label="runtime"))
        if isinstance(result, Saved):
            self.saved.append((result.id, label))

    def apply(self, op: str, n: int) -> None:
        if op == "until":
            self.save_until(
                "profile", n, f"profile {n} #{len(self.saved)}", f"prof-u{n}", n % 5 + 1
            )
        elif op in ("sight", "sight-until"):
            hours = n % 3 + 1 if op == "sight-until" else None
            self.save_until("preference", n, f"Likes thing {n % 2}.", f"pref-s{n % 2}", hours)
        elif op == "wait":
            _clock.advance(timedelta(hours=n % 5, minutes=30 * (n % 2)))
        elif op == "window" and self.saved:
            rid, _label = self.saved[n % len(self.saved)]
            until = None if n % 3 == 0 else _clock.now() + timedelta(hours=n % 4 + 1)
            change_validity(rid, until, REVIEWER)
        else:
            super().apply(op, n)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    st.sampled_from(["guarded", "earned"]),
    st.lists(
        st.tuples(
            # Time's operations weighted up, so windows close and memories earn often.
            st.sampled_from((*TIMED_OPS, "sight", "sight-until", "wait", "wait", "until")),
            st.integers(0, 20),
        ),
        min_size=1,
        max_size=30,
    ),
)
# An earned memory with a window, its sightings, then its window closing.
@example("earned", [("sight-until", 0), ("sight", 2), ("sight", 4), ("deliver", 0), ("wait", 4)])
def test_as_of_every_delivery_is_its_prompt_while_time_passes(
    team: Team, preferences: str, steps: list[tuple[str, int]]
) -> None:
    """As of its time, each delivery's composition is its prompt and report, with
    windows closing between deliveries, moved or cleared by a reviewer, and sightings
    earning a memory its place (SPEC §14, §19.1, §19.2)."""
    with mock.patch("django.utils.timezone.now", _clock.now):
        history = TimedHistory(team, preferences)
        for op, n in [*steps, ("deliver", 0), ("wait", 3), ("deliver", 0)]:
            # Every operation a moment after the last: what it writes is after it.
            _clock.advance(timedelta(milliseconds=1))
            history.apply(op, n)
        agent = history.agent()
        for delivery in Delivery.objects.filter(agent=agent).select_related("composition"):
            delivered = composition_data(delivery.composition)
            then = json.loads(compose_as_of(agent, delivery.delivered_at).model_dump_json())
            assert then["prompt"] == delivered["prompt"]
            assert then["report"] == delivered["report"]
            # None silent: every memory saved by then is in a fragment or a drop, once.
            in_prompt = [
                memory_id
                for section in then["prompt"]["sections"]
                for fragment in section["fragments"]
                for memory_id in fragment["memory_ids"]
            ]
            dropped = [d["memory_id"] for d in then["report"]["drops"]]
            saved_then = Promotion.objects.filter(
                agent=agent, record__created_at__lte=delivery.delivered_at
            ).values_list("record_id", flat=True)
            assert sorted(in_prompt + dropped) == sorted(saved_then)
