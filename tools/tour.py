"""A tour of every page of the product on the demo's data: the list the screenshots and
the accessibility checks visit, who visits each page, and the walk itself in Chromium.

The demo (``seed_demo``) has three agents with memories of every outcome, key/value keys
with history and a delivery history; the tour adds a user who belongs to no team, a
history of revisions of Wren's declarations by two hands (a person in the admin and the
demo's token through the API, then a restore), a change proposed for Sentinel once it is
protected, three webhooks with tries of every outcome (delivering, failing in a row,
failing) and, for the screenshots, a big agent (40 sections of 50 entries and a few
hundred memories).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import transaction
from django.utils import timezone
from django.utils.http import urlencode

from bench.data import big_memory_config, memory_plan
from demo.configs import COMPANION
from kvstore.models import Key
from lens.actors import SYSTEM, Actor
from lens.core.config import AgentConfig
from lens.models import Agent, ApiToken, Proposal, Revision, SectionDeclaration, Team, Via
from memory.configuring import restore_revision, store_agent
from memory.core.deliveries import DeliveryInput
from memory.core.records import MemoryInput
from memory.decisions import decide
from memory.deliveries.ledger import deliver
from memory.models import Delivery, MemoryRecord, PromotionStatus, RoutingCase
from memory.saving import Saved, save_memory
from webhooks.endpoints import create_endpoint
from webhooks.models import Dispatch, Endpoint
from webhooks.outbox import Outgoing, message_body, new_message_id, queue
from webhooks.posting import Outcome
from webhooks.sending import Claimed, claim, record

Visitor = Literal["demo", "loner", "anonymous"]

DEMO_TEAM = "demo"
# Logins the tour uses: the demo's own superuser, and a user in no team.
PASSWORDS: dict[Visitor, str] = {"demo": "demo", "loner": "loner-tour-password"}
BIG_AGENT = "big"
BIG_MEMORIES = 300
# The big agent runs on models a team serves itself, with windows only an operator's
# MODEL_CONTEXT_WINDOWS knows (``BIG_MODEL_WINDOWS``, which the screenshots add): its
# prompt fills more than half of the first, and more than the whole of the second.
BIG_MODEL = "team-llama-3.1-8b"
SMALL_MODEL = "team-mistral-7b"
BIG_MODEL_WINDOWS = {BIG_MODEL: 65_536, SMALL_MODEL: 32_768}


@dataclass(frozen=True)
class Stop:
    """One page: a file-name-safe ``name``, its path, who looks at it, the status due."""

    name: str
    path: str
    visitor: Visitor = "demo"
    status: int = 200


def seed(big: bool = False) -> None:
    """The demo's data, a user in no team and, with ``big``, the big agent."""
    call_command("seed_demo", "--force", verbosity=0)
    loner, created = User.objects.get_or_create(username="loner")
    if created:
        loner.set_password(PASSWORDS["loner"])
        loner.save()
    seed_revisions()
    seed_proposal()
    seed_webhooks()
    if big:
        seed_big_agent()


def seed_revisions() -> None:
    """After the demo's own three revisions of Wren, its declarations changed five more
    times, by the demo user in the admin and by the demo's token through the API, then
    restored to revision 1 (so its prompt is the demo's first): the revisions pages have
    words, diffs and a restore to show. Revision 6 is the one that adds a section."""
    team = Team.objects.get(slug=DEMO_TEAM)
    wren = Agent.objects.get(team=team, slug="wren")
    if Revision.objects.filter(agent=wren, via=Via.RESTORE).exists():
        return
    person = Actor.for_user(User.objects.get(username="demo"))
    token = Actor.for_token(ApiToken.objects.filter(team=team).earliest("pk"))
    config: dict[str, Any] = copy.deepcopy(COMPANION)
    sections = config["background"]["sections"]

    def save(actor: Actor, via: Via) -> None:
        store_agent(team, "wren", AgentConfig.model_validate(config), actor=actor, via=via)

    config["tone"] = "Warm, brief and plain-spoken."
    save(person, Via.ADMIN)
    sections[0]["entries"].append({"key": "home_city", "value": "Lyon"})
    save(token, Via.API)
    sections.append({"id": "projects", "title": "Current Projects", "promotion": "guarded"})
    save(person, Via.ADMIN)
    sections[2]["entries"][2]["value"] = 8  # check_in_hour
    save(token, Via.API)
    sections[1]["promotion"] = "auto"
    save(person, Via.ADMIN)
    restore_revision(wren, 1, person)


def seed_proposal() -> int:
    """The demo's change waiting on protected Sentinel (``demo.edits``): maya's,
    which retitles Project State, locks Conventions and changes the tone. Its id."""
    sentinel = Agent.objects.get(team__slug=DEMO_TEAM, slug="sentinel")
    return Proposal.objects.filter(agent=sentinel).order_by("pk").values_list("pk", flat=True)[0]


# The demo's webhooks: literal public addresses, so making them needs no DNS.
RUNTIME_HOOK = "https://93.184.215.14/hooks/lens"
MIRROR_HOOK = "https://93.184.215.34/compliance/audit-mirror?source=composition-lens&v=2"
LEGACY_HOOK = "https://93.184.215.77/legacy/approvals"


def seed_webhooks() -> None:
    """Three endpoints of the demo team, made by the demo user, with tries recorded the
    way the sender records them (as if each receiver had answered so): the agent
    runtime's all delivered, the audit mirror's last four failed in a row (the page
    warns), the legacy one failing since two days."""
    team = Team.objects.get(slug=DEMO_TEAM)
    if Endpoint.objects.filter(team=team).exists():
        return
    person = Actor.for_user(User.objects.get(username="demo"))
    runtime = create_endpoint(
        team,
        person,
        RUNTIME_HOOK,
        ["prompt.changed", "approval.pending"],
        "Agent runtime: fetches the prompt again when it changes",
    ).endpoint
    mirror = create_endpoint(
        team, person, MIRROR_HOOK, ["*"], "Copies every audit event to the compliance store"
    ).endpoint
    legacy = create_endpoint(
        team, person, LEGACY_HOOK, ["memory.approved", "memory.rejected"], ""
    ).endpoint
    now = timezone.now()
    ok = [(200, 84, ""), (204, 132, ""), (200, 97, ""), (200, 240, ""), (204, 61, "")]
    for minutes, (event_type, answer) in enumerate(
        zip(["prompt.changed", "approval.pending"] * 3, ok * 2, strict=False)
    ):
        _tried(runtime, event_type, now - timedelta(minutes=90 - minutes * 12), [answer])
    _tried(mirror, "memory.saved", now - timedelta(hours=5), [(200, 118, "")])
    silent = (None, 10_000, "no answer within 10 s")
    busy = (503, 41, "HTTP 503")
    _tried(mirror, "kv.written", now - timedelta(minutes=50), [busy, silent])
    _tried(mirror, "delivery.recorded", now - timedelta(minutes=20), [busy, busy])
    down = (None, 3, "could not connect: [Errno 111] Connection refused")
    _tried(legacy, "memory.approved", now - timedelta(days=3, hours=2), [down, down, down])
    Endpoint.objects.filter(pk=legacy.pk).update(failing_since=now - timedelta(days=2))


def _tried(
    endpoint: Endpoint,
    event_type: str,
    at: datetime,
    answers: list[tuple[int | None, int, str]],
) -> None:
    """A message of ``event_type`` queued at ``at`` and tried once per answer, a minute
    apart, recorded by the sender's own bookkeeping."""
    data = {"action": event_type, "agent": "wren", "seq": 0}
    stamp = at.isoformat().replace("+00:00", "Z")
    message_id = new_message_id()
    body = message_body(event_type, stamp, data)
    with transaction.atomic():
        queue([Outgoing(endpoint.team_id, endpoint.pk, message_id, event_type, body, at)])
    dispatch = Dispatch.objects.get(endpoint=endpoint, message_id=message_id)
    for n, (status, duration_ms, error) in enumerate(answers):
        when = at + timedelta(minutes=n)
        Dispatch.objects.filter(pk=dispatch.pk).update(next_try_at=when)
        claimed = claim(dispatch.pk, endpoint.pk, when, {})
        assert isinstance(claimed, Claimed), dispatch
        record(claimed, Outcome(status, duration_ms, error), when, 0.0)


def seed_big_agent() -> None:
    """40 sections of 50 authored entries and ``BIG_MEMORIES`` memories of every fate
    (composed, over the budget, beaten by an authored entry, pending, rejected,
    superseded, declined), in the demo team, declared to run on ``BIG_MODEL`` and
    delivered once on it and once on ``SMALL_MODEL``."""
    team = Team.objects.get(slug=DEMO_TEAM)
    if Agent.objects.filter(team=team, slug=BIG_AGENT).exists():
        return
    config = big_memory_config().model_copy(update={"model": BIG_MODEL})
    agent, _ = store_agent(team, BIG_AGENT, config)
    reviewer = Actor.for_user(User.objects.get(username="demo"))
    ids: list[str] = []
    for planned in memory_plan(BIG_MEMORIES):
        supersedes = None if planned.supersedes is None else ids[planned.supersedes]
        saved = save_memory(
            agent,
            MemoryInput(
                kind=planned.kind,
                content=planned.content,
                label=planned.label,
                supersedes=supersedes,
            ),
            SYSTEM,
        )
        assert isinstance(saved, Saved), saved
        ids.append(saved.id)
        if planned.fate in ("approve", "reject"):
            decide(saved.id, planned.fate == "approve", reviewer)
    for session, model in (("load-test-1", BIG_MODEL), ("load-test-2", SMALL_MODEL)):
        deliver(agent, SYSTEM, DeliveryInput(session=session, model=model))


def stops() -> list[Stop]:
    """Every page, in the order a person would find them. Call after ``seed``."""
    team = Team.objects.get(slug=DEMO_TEAM)
    wren = Agent.objects.get(team=team, slug="wren")
    found: list[Stop] = [Stop("agents", "/")]
    for agent in Agent.objects.filter(team=team).order_by("pk"):
        found.append(Stop(f"lens-{agent.slug}", f"/agents/{agent.slug}/"))
    # The agent's tools page, with a recall preview shown.
    found.append(Stop("try", f"/agents/{wren.slug}/try/?recall=coffee"))
    found.append(Stop("drops", f"/agents/{wren.slug}/drops/awaiting-approval/"))
    found.append(Stop("approvals", "/approvals/"))
    # A change proposed for a protected agent, with the memories it moves.
    proposal = Proposal.objects.filter(agent__team=team).order_by("pk").first()
    if proposal is not None:
        found.append(Stop("proposal", f"/proposals/{proposal.pk}/"))
    found += [
        Stop("memories", "/memories/"),
        Stop("memories-search", "/memories/?q=coffee"),
    ]
    # One memory page for each promotion status the demo holds.
    for status in PromotionStatus:
        record = (
            MemoryRecord.objects.filter(agent=wren, promotion__status=status)
            .order_by("created_at")
            .first()
        )
        if record is not None:
            found.append(Stop(f"memory-{status.value}", f"/memories/{record.pk}/"))
            if status == PromotionStatus.APPROVED:
                # Revoke's confirmation page: what would leave the prompt.
                found.append(Stop("memory-revoke", f"/memories/{record.pk}/revoke/"))
                # Erase's confirmation page: the reason and the typed id.
                found.append(Stop("memory-erase", f"/memories/{record.pk}/erase/"))
    found.append(Stop("audit", "/audit/"))
    found.append(Stop("kv", "/kv/"))
    # A key with history, showing the diff of its last change.
    key = (
        Key.objects.filter(team=team, latest_version__gte=2)
        .order_by("key")
        .values_list("key", "latest_version")
        .first()
    )
    if key is not None:
        name, latest = key
        found.append(Stop("kv-key", f"/kv/{name}/?from={latest - 1}&to={latest}"))
    deliveries = list(
        Delivery.objects.filter(agent=wren).order_by("delivered_at").values_list("pk", flat=True)
    )
    found.append(Stop("deliveries", f"/agents/{wren.slug}/deliveries/"))
    # The big agent's deliveries: a warning and an alarm against their models' windows.
    if Delivery.objects.filter(agent__team=team, agent__slug=BIG_AGENT).exists():
        found.append(Stop("deliveries-big", f"/agents/{BIG_AGENT}/deliveries/"))
        found.append(Stop("stability-big", f"/agents/{BIG_AGENT}/stability/"))
    if len(deliveries) >= 2:
        found += [
            # The Cache stability card as its own page (the lens loads it after paint).
            Stop("stability", f"/agents/{wren.slug}/stability/"),
            Stop("delivery", f"/deliveries/{deliveries[-1]}/"),
            Stop("delivery-diff", f"/deliveries/{deliveries[-1]}/diff/"),
            Stop("delivery-live", f"/deliveries/{deliveries[0]}/live/"),
        ]
    if deliveries:
        # The lens as it stood when Wren's first prompt was delivered: the past view.
        first = Delivery.objects.get(pk=deliveries[0]).delivered_at.astimezone(UTC).isoformat()
        found.append(Stop("lens-past", f"/agents/{wren.slug}/?{urlencode({'as_of': first})}"))
    # Wren's routing: its cases, the score, failures and the confusion between sections.
    if RoutingCase.objects.filter(agent=wren).exists():
        found.append(Stop("routing", f"/agents/{wren.slug}/routing/"))
    # Wren's history of revisions, and one that added a section and says so in words.
    # The migration plan (empty on the demo: every placement is where its spec puts it).
    found.append(Stop("migration", f"/agents/{wren.slug}/migration/"))
    found += [
        Stop("revisions", f"/agents/{wren.slug}/revisions/"),
        Stop("revision", f"/agents/{wren.slug}/revisions/6/"),
        # Restore's confirmation: what restoring the first revision would do.
        Stop("revision-restore", f"/agents/{wren.slug}/revisions/1/restore/"),
    ]
    section = SectionDeclaration.objects.filter(agent=wren).order_by("pk").first()
    # Settings › Webhooks: the list (with its form), an endpoint whose tries fail in a
    # row, one that is failing, and the confirmation before deleting.
    hooks = dict(Endpoint.objects.filter(team=team).values_list("url", "pk"))
    found.append(Stop("webhooks", "/settings/webhooks/"))
    if MIRROR_HOOK in hooks and LEGACY_HOOK in hooks:
        found += [
            Stop("webhook", f"/settings/webhooks/{hooks[MIRROR_HOOK]}/"),
            Stop("webhook-failing", f"/settings/webhooks/{hooks[LEGACY_HOOK]}/"),
            Stop("webhook-delete", f"/settings/webhooks/{hooks[MIRROR_HOOK]}/delete/"),
        ]
    # Settings › My tokens: the visitor's own API tokens and the form that issues one.
    found.append(Stop("my-tokens", "/settings/tokens/"))
    found += [
        Stop("admin", "/admin/"),
        Stop("admin-agent", f"/admin/lens/agent/{wren.pk}/change/"),
    ]
    if section is not None:
        found.append(Stop("admin-section", f"/admin/lens/sectiondeclaration/{section.pk}/change/"))
    found += [
        Stop("not-found", "/no/such/page/", status=404),
        Stop("no-team", "/", visitor="loner"),
        Stop("login", "/accounts/login/", visitor="anonymous"),
    ]
    return found


def log_in(page: Any, base_url: str, visitor: Visitor) -> None:
    if visitor == "anonymous":
        return
    page.goto(f"{base_url}/accounts/login/")
    page.get_by_label("Username").fill(visitor)
    page.get_by_label("Password").fill(PASSWORDS[visitor])
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{base_url}/")


def walk(
    browser: Any, base_url: str, tour: list[Stop], **context_options: Any
) -> Iterator[tuple[Stop, Any]]:
    """Each stop, loaded in Chromium by its visitor (one browser context per visitor,
    made with ``context_options``: viewport, color_scheme...). Yields the stop and the
    page once it has loaded; a wrong status stops the walk."""
    for visitor in ("demo", "loner", "anonymous"):
        mine = [stop for stop in tour if stop.visitor == visitor]
        if not mine:
            continue
        context = browser.new_context(**context_options)
        try:
            page = context.new_page()
            page.set_default_timeout(20_000)
            log_in(page, base_url, visitor)
            for stop in mine:
                response = page.goto(f"{base_url}{stop.path}")
                assert response is not None, stop
                assert response.status == stop.status, (stop, response.status)
                yield stop, page
        finally:
            context.close()
