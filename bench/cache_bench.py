"""Prompt-cache stability targets (SPEC §17): what counting a delivery's cached prefix
costs its recording, for the 40-section agent with 1,000 memories (with the figures
against without, interleaved, in the same run), and the timeline with its cache line and
chart at 100,000 deliveries.

"Without" is the same ``deliver()`` with ``memory.deliveries.cache_figures.ENABLED``
off (no timeline lock, no comparison: recording as before the figures). Both arms
compose, and so tokenise, the same prompts: composing keeps the ids, which is what
lets a delivery compare them without tokenising again.
"""

from __future__ import annotations

import statistics
import time
import uuid
from collections.abc import Callable
from datetime import timedelta

from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from bench.common import analyze
from bench.data import big_memory_config
from bench.lens_bench import save_planned
from lens.actors import SYSTEM, Actor
from lens.agents import get_agent
from lens.core import token_counts
from lens.core.cache_prefix import cache_prefix
from lens.core.config import AgentConfig
from lens.models import Agent, Membership, Team
from memory.configuring import store_agent
from memory.deliveries import cache_figures
from memory.deliveries.ledger import composition_of, deliver
from memory.models import Delivery

_RUN = uuid.uuid4().hex[:8]
ROUNDS = 40
TIMELINE_DELIVERIES = 100_000
RUNTIME = Actor(label="runtime")


def _flipped(config: AgentConfig, turn: int) -> AgentConfig:
    """``config`` with the first entry of its last Background section changed: the
    prompt differs from the one before it late, past 39 sections (the most to compare
    and to place)."""
    sections = list(config.background.sections)
    last = sections[-1]
    entries = list(last.entries)
    entries[0] = entries[0].model_copy(update={"value": f"changed, turn {turn}"})
    sections[-1] = last.model_copy(update={"entries": tuple(entries)})
    background = config.background.model_copy(update={"sections": tuple(sections)})
    return config.model_copy(update={"background": background})


def _recording(team: Team, changed: bool, forget: bool = False) -> dict[str, float]:
    """Median ms of ``deliver()`` with and without the figures, turn about. ``changed``:
    each delivery's prompt differs from the one before (the agent is changed between
    them, untimed); ``forget``: the previous prompt's ids are not in this process."""
    config = big_memory_config()
    last = config.background.sections[-1].id
    samples: dict[str, list[float]] = {"with": [], "without": []}
    turn = 0
    for round_ in range(ROUNDS + 1):
        order = ("with", "without") if round_ % 2 else ("without", "with")
        for arm in order:
            turn += 1
            if changed:
                store_agent(team, "remembers", _flipped(config, turn % 2))
            agent = get_agent(team, "remembers")
            if forget:
                # Both arms then tokenise the new prompt as they compose it.
                token_counts._counter.forget()
            cache_figures.ENABLED = arm == "with"
            try:
                start = time.perf_counter()
                recorded = deliver(agent, RUNTIME).delivery
                elapsed = (time.perf_counter() - start) * 1000
            finally:
                cache_figures.ENABLED = True
            if arm == "with":  # the path measured is the one meant
                expected = last if changed else None
                assert recorded.changed_background_section == expected, recorded
            if round_:  # the first round warms
                samples[arm].append(elapsed)
    return {arm: statistics.median(values) for arm, values in samples.items()}


def run(median_ms: Callable[..., float], report: Callable[..., None]) -> None:
    team = Team.objects.create(slug=f"bench-cache-{_RUN}", name="Bench cache")
    user = User.objects.create_user(f"bench-cache-{_RUN}", password="x")
    Membership.objects.create(team=team, user=user)
    agent = store_agent(team, "remembers", big_memory_config())[0]
    save_planned(agent, SYSTEM)
    analyze()
    prompt = deliver(get_agent(team, "remembers"), RUNTIME).delivery.composition
    print(
        "\nPrompt cache: recording a delivery of the 40-section agent with 1,000 memories"
        f" ({prompt.chars:,} chars, {prompt.tokens:,} tokens), with the figures and"
        f" without, {ROUNDS} interleaved each"
    )
    for label, changed, forget in (
        ("unchanged prompt", False, False),
        ("prompt changed in its last section", True, False),
        ("changed, previous prompt not cached (another process)", True, True),
    ):
        timed = _recording(team, changed, forget)
        report(f"{label}: with", timed["with"])
        report(f"{label}: without", timed["without"])
        target = None if forget else 1.15
        report(f"{label}: ratio", timed["with"] / timed["without"], target, unit="×")

    _parts(team, median_ms, report)

    agent = get_agent(team, "remembers")
    newest = Delivery.objects.filter(agent=agent).order_by("-delivered_at").first()
    assert newest is not None
    _copies(agent, newest, TIMELINE_DELIVERIES)
    analyze()
    browser = Client()
    browser.force_login(user)
    browser.get(f"/?team={team.slug}")
    url = "/agents/remembers/deliveries/"
    print(f"\nWith {TIMELINE_DELIVERIES:,} deliveries of one agent (each with its cache line)")
    report(
        "timeline page with the cache line and chart (median)",
        median_ms(lambda: browser.get(url), 15),
        100,
    )
    report(
        "timeline page 1,000 (median)", median_ms(lambda: browser.get(f"{url}?page=1000"), 10), 100
    )
    with CaptureQueriesContext(connection) as ctx:
        assert browser.get(url).status_code == 200
    print(f"  queries {url:<40} {len(ctx.captured_queries)}")


def _parts(team: Team, median_ms: Callable[..., float], report: Callable[..., None]) -> None:
    """What the figures add to a delivery whose prompt changed in its last section, part
    by part, without the noise of the whole recording around them."""
    config = big_memory_config()
    store_agent(team, "remembers", _flipped(config, 0))
    deliver(get_agent(team, "remembers"), RUNTIME)
    store_agent(team, "remembers", _flipped(config, 1))
    agent = get_agent(team, "remembers")
    latest = deliver(agent, RUNTIME).delivery
    composition = composition_of(latest.composition)
    previous = Delivery.objects.filter(agent=agent, delivered_at__lt=latest.delivered_at)
    before = previous.select_related("composition").order_by("-delivered_at").first()
    assert before is not None
    text = composition.prompt.text
    ids = token_counts.token_ids(text)
    sections, background = composition.prompt.sections, composition.background
    stored = cache_figures.Previous(
        before.delivered_at, before.composition_id, before.composition.prompt_sha256, False
    )
    print("  what the figures add, part by part (prompt changed in its last section)")
    report(
        "    the previous delivery, read (one query)",
        median_ms(lambda: cache_figures.newest(agent.pk), 50),
    )
    report(
        "    figures, previous prompt's ids cached (compare ids)",
        median_ms(lambda: cache_figures.measure(composition, latest.composition, stored), 50),
    )
    report(
        "    its stored composition read back (not cached)",
        median_ms(lambda: cache_figures._stored_prompt(before.composition_id), 20),
    )
    before_text = cache_figures._stored_prompt(before.composition_id)
    report(
        "    figures from that text (lines around the change tokenised)",
        median_ms(lambda: cache_prefix((before_text, None), text, ids, sections, background), 50),
    )
    report(
        "    (tokenising that previous prompt whole instead)",
        median_ms(lambda: token_counts._counter.encoding().encode_ordinary(before_text), 10),
    )


def _copies(agent: Agent, template: Delivery, count: int) -> None:
    """``count`` deliveries of ``template``'s composition, older than it, one second
    apart, each with figures (a change in a Background section every fourth)."""
    tokens = template.composition.tokens
    for start in range(0, count, 5_000):
        Delivery.objects.bulk_create(
            Delivery(
                agent=agent,
                composition_id=template.composition_id,
                delivered_at=template.delivered_at - timedelta(seconds=count - i),
                session=f"sess-{i // 20:06d}",
                model="gpt-4.1-mini",
                cache_prefix_tokens=tokens if i % 4 else tokens * (i % 97) // 100,
                cache_prefix_chars=0,
                changed_section=None if i % 4 else "Context",
                changed_background_section=None if i % 4 else "user_preferences",
            )
            for i in range(start, min(start + 5_000, count))
        )


def cleanup() -> None:
    cache_figures.ENABLED = True
    teams = Team.objects.filter(slug=f"bench-cache-{_RUN}")
    Delivery.objects.filter(agent__team__in=teams).delete()
    teams.delete()
    User.objects.filter(username=f"bench-cache-{_RUN}").delete()
