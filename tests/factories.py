"""What tests build and do: users and logged-in clients, agents and their configs,
memories, posts to the pages, and races between threads.

Test modules import shared code from here, ``tests.api_calls`` (the JSON API),
``tests.samples`` (pure data and builders of the cores' values) and ``tests.pages``
(reading HTML), never from ``conftest`` or from each other; ``conftest`` holds only
fixtures.
"""

from __future__ import annotations

import copy
import gzip
import hashlib
import json
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from django.contrib.auth.models import Permission, User
from django.db import connection
from django.test import Client

from kvstore import store
from kvstore.models import Version
from lens.actors import SYSTEM, Actor
from lens.agents import config_of, with_config
from lens.core.config import AgentConfig
from lens.models import Agent, Membership, Proposal, Revision, Team, Via
from memory import search
from memory.composition import compose
from memory.configuring import store_agent, store_config
from memory.core.composition import Composition
from memory.core.records import MemoryInput
from memory.decisions import decide, reopen, revoke
from memory.deliveries.ledger import composition_json
from memory.models import (
    CompositionMemory,
    Delivery,
    EventKind,
    MemoryEvent,
    MemoryRecord,
    MigratedPromotion,
    Promotion,
    PromotionStatus,
    RoutingCase,
    SearchDoc,
)
from memory.saving import Saved, save_memory
from tests.api_calls import ApiClient, db_snapshot, memory_body, post_memory
from tests.samples import SAMPLE_CONFIG, V2_SPECS

# --- people and clients ------------------------------------------------------------

PASSWORD = "correct horse battery staple"
HTMX = {"HX-Request": "true"}  # the header htmx sends with every request


def make_user(username: str, *teams: Team, **extra: Any) -> User:
    user = User.objects.create_user(username=username, password=PASSWORD, **extra)
    for team in teams:
        Membership.objects.create(team=team, user=user)
    return user


def grant(user: User) -> User:
    """Give ``user`` the permission to decide: ``memory.approve_promotion``."""
    user.user_permissions.add(Permission.objects.get(codename="approve_promotion"))
    return user


def logged_in(user: User, **options: Any) -> Client:
    client = Client(**options)
    client.force_login(user)
    return client


def login(page: Any, base_url: str, username: str, password: str = PASSWORD) -> None:
    page.goto(f"{base_url}/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{base_url}/")


# --- agents and their configs ------------------------------------------------------


def create_agent(team: Team, slug: str = "wren", config: dict[str, Any] | None = None) -> Agent:
    agent, _ = store_agent(team, slug, AgentConfig.model_validate(config or SAMPLE_CONFIG))
    return agent


def v2_config(**tiers: str) -> dict[str, Any]:
    """``memory_config()`` with the sections ``USER_BACKGROUND_V2`` routes to declared too
    (``about_user`` auto and ``preferences`` guarded, unless ``tiers`` says otherwise)."""
    config = memory_config()
    config["background"]["sections"] += [
        {"id": "about_user", "title": "About You", "promotion": tiers.get("about_user", "auto")},
        {
            "id": "preferences",
            "title": "Preferences",
            "promotion": tiers.get("preferences", "guarded"),
        },
    ]
    return config


def migration_story(team: Team, settings: Any, slug: str = "wren") -> tuple[Agent, dict[str, str]]:
    """Wren's memories saved under ``user-background`` 1 (two profile facts composed, a
    preference waiting), then version 2 deployed and its sections declared: the plan
    moves all three."""
    agent = create_agent(team, slug, memory_config())
    ids = {
        "name": remember(agent, "profile", "Mira", label="name"),
        "city": remember(agent, "profile", "Lives in Gdansk", label="city"),
        "theme": remember(agent, "preference", "Dark theme", label="theme"),
    }
    settings.MEMORY_ROUTING_SPECS = V2_SPECS
    store_config(team, slug, AgentConfig.model_validate(v2_config()))
    return Agent.objects.get(pk=agent.pk), ids


def propose(team: Team, slug: str, config: dict[str, Any], user: User) -> Proposal:
    """``user``'s change of the protected agent ``slug`` to ``config``: it waits as a
    proposal, nothing applied."""
    stored = store_config(
        team, slug, AgentConfig.model_validate(config), actor=Actor.for_user(user), via=Via.API
    )
    assert stored.proposal is not None, "the agent is not protected, or nothing changed"
    return stored.proposal


def revision_count(agent: Agent) -> int:
    return Revision.objects.filter(agent=agent).count()


def sample_config() -> dict[str, Any]:
    """A private copy of the sample config, safe to mutate."""
    return copy.deepcopy(SAMPLE_CONFIG)


def with_background(*sections: dict[str, Any], name: str = "Probe") -> dict[str, Any]:
    return {"name": name, "background": {"sections": list(sections)}}


def memory_config(
    preferences: str | None = "guarded", name: str = "Wren", **extra: Any
) -> dict[str, Any]:
    """SAMPLE_CONFIG routed by ``user-background``: an auto profile section holding one
    authored entry (``timezone``), and the preferences section at the tier given (or not
    declared at all when ``preferences`` is None).
    """
    sections: list[dict[str, Any]] = [
        {
            "id": "user_profile",
            "title": "About the User",
            "promotion": "auto",
            "entries": [{"key": "timezone", "value": "Europe/Warsaw"}],
        }
    ]
    if preferences is not None:
        sections.append(
            {"id": "user_preferences", "title": "User Preferences", "promotion": preferences}
        )
    return {
        **SAMPLE_CONFIG,
        "name": name,
        "routing_spec": "user-background",
        "background": {"sections": sections},
        **extra,
    }


def many_sections(sections: int, entries: int) -> dict[str, Any]:
    """``memory_config()`` with ``sections`` more authored sections of ``entries`` each."""
    config = memory_config()
    config["background"]["sections"] += [
        {
            "id": f"section_{s}",
            "title": f"Section {s}",
            "entries": [{"key": f"key_{e}", "value": f"value {s}.{e}"} for e in range(entries)],
        }
        for s in range(sections)
    ]
    return config


def approvals_config() -> dict[str, Any]:
    """``memory_config()`` with the guarded preferences section holding one authored entry
    (``theme``), so a queued memory can land on an authored address."""
    config = memory_config()
    preferences = config["background"]["sections"][1]
    preferences["entries"] = [{"key": "theme", "value": "Light theme, large font."}]
    return config


def project_config(name: str = "Atlas") -> dict[str, Any]:
    """The ``project`` preset with its two guarded sections."""
    return {
        **SAMPLE_CONFIG,
        "name": name,
        "routing_spec": "project",
        "background": {
            "sections": [
                {"id": "project_context", "title": "Project Context", "promotion": "guarded"},
                {"id": "conventions", "title": "Conventions", "promotion": "guarded"},
                {"id": "project_state", "title": "Project State", "promotion": "auto"},
            ]
        },
    }


# ``user-background`` with the preset's two sections as it expects them, plus an authored
# locked section: the Wren of the memories API tests.
WREN_CONFIG: dict[str, Any] = {
    **SAMPLE_CONFIG,
    "routing_spec": "user-background",
    "background": {
        "sections": [
            {"id": "user_profile", "title": "About the User", "promotion": "auto"},
            {"id": "user_preferences", "title": "User Preferences", "promotion": "guarded"},
            {
                "id": "ground_rules",
                "title": "Ground Rules",
                "promotion": "locked",
                "entries": [{"key": "privacy", "value": "Never share what the user says."}],
            },
        ]
    },
}


# Only one of the preset's sections: preferences route to an undeclared section.
SOLO_CONFIG: dict[str, Any] = {
    **WREN_CONFIG,
    "name": "Solo",
    "background": {
        "sections": [{"id": "user_profile", "title": "About the User", "promotion": "auto"}]
    },
}


# The preset's sections declared with the tiers memory cannot fill.
VAULT_CONFIG: dict[str, Any] = {
    **WREN_CONFIG,
    "name": "Vault",
    "background": {
        "sections": [
            {"id": "user_profile", "title": "About the User", "promotion": "locked"},
            {"id": "user_preferences", "title": "User Preferences", "promotion": "earned"},
        ]
    },
}

# No routing spec at all: every memory is spec-declined.
PLAIN_CONFIG: dict[str, Any] = {**SOLO_CONFIG, "name": "Plain", "routing_spec": None}


# --- memories ----------------------------------------------------------------------


def remember(
    agent: Agent,
    kind: str,
    content: str,
    label: str | None = None,
    tags: list[str] | None = None,
    supersedes: str | None = None,
    actor: Actor = SYSTEM,
    session: str | None = None,
) -> str:
    """Save a memory the way the API does; return its id (it must be saved)."""
    result = save_memory(
        agent,
        MemoryInput(
            kind=kind,
            content=content,
            label=label,
            tags=tags or [],
            supersedes=supersedes,
            session=session,
        ),
        actor,
    )
    assert isinstance(result, Saved), result
    return result.id


def composed(agent: Agent) -> Composition:
    """The agent's composition, read fresh from the database."""
    return compose(with_config(Agent.objects.filter(pk=agent.pk)).get())


def fill_memories(agent: Agent, reviewer: User, n: int, start: int = 0) -> None:
    """``n`` memories of every outcome: composed, pending, rejected, approved, declined
    (``reviewer`` decides the guarded ones)."""
    decider = Actor.for_user(reviewer)
    for i in range(start, start + n):
        match i % 5:
            case 0:
                remember(agent, "profile", f"Profile fact {i}", label=f"p{i}")
            case 1:
                remember(agent, "preference", f"Pending preference {i}", label=f"q{i}")
            case 2:
                decide(
                    remember(agent, "preference", f"Rejected {i}", label=f"r{i}"), False, decider
                )
            case 3:
                decide(remember(agent, "preference", f"Approved {i}", label=f"a{i}"), True, decider)
            case _:
                remember(agent, "fact", f"Declined fact {i}", tags=["x", f"t{i}"])


def every_drop(agent: Agent, reviewer: User, n: int, start: int = 0) -> None:
    """``n`` memories of each way to miss the prompt (pending, rejected, revoked,
    declined, superseded, and a long one that a small budget leaves out) and ``n``
    composed ones, with the real operations (``reviewer`` decides)."""
    decider = Actor.for_user(reviewer)
    for i in range(start, start + n):
        remember(agent, "profile", f"Profile {i}", label=f"p{i}")
        remember(agent, "preference", f"Pending {i}", label=f"q{i}")
        decide(remember(agent, "preference", f"Rejected {i}", label=f"r{i}"), False, decider, "no")
        approved = remember(agent, "preference", f"Approved {i}", label=f"a{i}")
        decide(approved, True, decider)
        revoke(approved, decider, "changed")
        remember(agent, "fact", f"A fact {i}")
        old = remember(agent, "profile", f"Old {i}", label=f"s{i}")
        remember(agent, "profile", f"New {i}", label=f"s{i}", supersedes=old)
        remember(agent, "profile", f"Long {i} " * 20, label=f"long{i}")


@dataclass
class Story:
    """One agent with a memory for every reason a memory can miss the prompt."""

    agent: Agent
    ids: dict[str, str]
    expected_drops: dict[str, str]
    composed_ids: set[str]


def preference(agent: Agent, content: str, label: str | None = None, **extra: Any) -> str:
    """A memory routed to a guarded section: its promotion row is pending."""
    record_id = remember(agent, "preference", content, label=label, **extra)
    assert promotion_of(record_id).status == PromotionStatus.PENDING
    return record_id


def many_pending(agent: Agent, n: int, prefix: str = "p") -> list[str]:
    return [preference(agent, f"Preference number {i}.", label=f"{prefix}{i}") for i in range(n)]


def promotion_of(record_id: str) -> Promotion:
    return Promotion.objects.select_related("decided_by").get(pk=record_id)


def event_kinds(record_id: str) -> list[str]:
    return list(
        MemoryEvent.objects.filter(record_id=record_id)
        .order_by("id")
        .values_list("kind", flat=True)
    )


DECISIONS = (EventKind.APPROVED, EventKind.REJECTED, EventKind.REVOKED)


def decisions(*record_ids: str) -> list[tuple[str, str, str]]:
    """(record id, kind, actor) of every approve/reject/revoke event, oldest first."""
    return list(
        MemoryEvent.objects.filter(record_id__in=record_ids, kind__in=DECISIONS)
        .order_by("at", "id")
        .values_list("record_id", "kind", "actor")
    )


def in_prompt(agent: Agent, record_id: str) -> bool:
    composition = composed(agent)
    return any(record_id in section.memory_ids for section in composition.prompt.sections)


def drop_reason(agent: Agent, record_id: str) -> str | None:
    return {d.memory_id: d.reason for d in composed(agent).report.drops}.get(record_id)


def memory_row_counts() -> tuple[int, int, int]:
    """How many records, promotion rows and events exist."""
    return (
        MemoryRecord.objects.count(),
        Promotion.objects.count(),
        MemoryEvent.objects.count(),
    )


def written_rows() -> tuple[int, ...]:
    """Records, promotion rows, events, search documents and deliveries: what a preview
    (SPEC §5.7) must never add to."""
    return (*memory_row_counts(), SearchDoc.objects.count(), Delivery.objects.count())


class Unchanged:
    """Remembers every count and every row; ``check()`` proves nothing moved since.
    ``ignore`` names tables a request may touch anyway (e.g. ``sessions.Session``)."""

    def __init__(self, ignore: tuple[str, ...] = ()) -> None:
        self.ignore = ignore
        self.baseline()

    def _rows(self) -> dict[str, list[dict[str, Any]]]:
        return {label: r for label, r in db_snapshot().items() if label not in self.ignore}

    def baseline(self) -> None:
        self.counts = written_rows()
        self.rows = self._rows()

    def check(self) -> None:
        assert written_rows() == self.counts
        assert self._rows() == self.rows


# --- the key/value pages -----------------------------------------------------------


def kv_page_url(key: str) -> str:
    return f"/kv/{key}/"


def write_versions(team: Team, key: str, *payloads: str) -> None:
    """Write each payload to ``key`` in turn: versions 1, 2, ... (after any already there)."""
    for payload in payloads:
        store.write(team, key, payload)


# The team a page form was rendered for (its hidden ``team`` field): the ``team`` fixture.
FORM_TEAM = "acme"


def post_write(
    client: Client,
    key: str,
    payload: str,
    if_version: int | str | None,
    *,
    team: str | None = FORM_TEAM,
    **extra: Any,
) -> Any:
    data: dict[str, Any] = {"action": "write", "payload": payload}
    if team is not None:
        data["team"] = team
    if if_version is not None:
        data["if_version"] = str(if_version)
    return client.post(kv_page_url(key), data, **extra)


def post_delete(
    client: Client, key: str, confirm: str | None, *, team: str | None = FORM_TEAM, **extra: Any
) -> Any:
    data = {"action": "delete"}
    if team is not None:
        data["team"] = team
    if confirm is not None:
        data["confirm"] = confirm
    return client.post(kv_page_url(key), data, **extra)


def versions_of(team: Team, key: str) -> list[tuple[int, str]]:
    """(version, payload) of every stored version of a team's key, oldest first."""
    return list(
        Version.objects.filter(key__team=team, key__key=key)
        .order_by("version")
        .values_list("version", "payload")
    )


# --- the approval queue ------------------------------------------------------------


def post_decision(
    client: Client,
    record_id: str,
    decision: str,
    reason: str | None = None,
    *,
    htmx: bool = True,
    query: str = "",
    team: str | None = FORM_TEAM,
    **headers: str,
) -> Any:
    data = {"decision": decision} if reason is None else {"decision": decision, "reason": reason}
    if team is not None:
        data["team"] = team
    return client.post(
        f"/approvals/{record_id}/decide/{query}",
        data,
        headers={**(HTMX if htmx else {}), **headers},
    )


def post_bulk(
    client: Client,
    decision: str,
    selected: Iterable[str],
    reason: str = "",
    *,
    htmx: bool = True,
    query: str = "",
    team: str | None = FORM_TEAM,
) -> Any:
    data: dict[str, Any] = {"decision": decision, "selected": list(selected), "reason": reason}
    if team is not None:
        data["team"] = team
    return client.post(
        f"/approvals/bulk/{query}",
        data,
        headers=HTMX if htmx else {},
    )


def post_proposal(
    client: Client,
    proposal_id: int,
    action: str,
    *,
    htmx: bool = False,
    team: str | None = FORM_TEAM,
    **data: str,
) -> Any:
    """Post ``action`` (publish, reject, withdraw) of a proposal, as its page's forms do
    (or, with ``htmx``, as the queue's rows do). A publish carries its confirmation, as
    the confirming form sends it, unless ``confirm`` says otherwise ("" for none)."""
    if team is not None:
        data["team"] = team
    if action == "publish":
        data.setdefault("confirm", "yes")
    return client.post(f"/proposals/{proposal_id}/{action}/", data, headers=HTMX if htmx else {})


# --- portable bundles --------------------------------------------------------------


def bundle_story(team: Team, api: ApiClient, reviewer: User) -> dict[str, str]:
    """Wren with a history worth carrying, made by the real operations: three revisions
    by different people and ways, memories saved through the API (odd Unicode, tags, a
    supersede), every decision a reviewer can make (with notes), and deliveries between
    them, two of which share a composition. Returns the memories' ids by role."""
    decider = Actor.for_user(reviewer)
    store_agent(team, "wren", AgentConfig.model_validate(memory_config()))
    config = api.get("/api/agents/wren").json()
    config["persona"] = "You are Wren, a companion — brief, warm, «exact»."
    assert api.put("/api/agents/wren", config).status_code == 200
    ids = {
        "name": post_memory(api, memory_body("profile", "The user's name is Doug.", label="name")),
        "city": post_memory(
            api, memory_body("profile", "Lives in Kraków — near the Café\u2028Zoë.", label="city")
        ),
        "fact": post_memory(
            api,
            memory_body(
                "fact",
                "Once saw a 🦊 at 5\u00a0a.m.",
                tags=["animals", "ночь"],
                valid_until="2099-01-01T00:00:00Z",
            ),
        ),
    }
    deliver_through(api, session="s-1", model="gpt-4.1-mini")
    ids["tea"] = post_memory(api, memory_body("preference", "Tea, never coffee.", label="drink"))
    ids["jokes"] = post_memory(api, memory_body("preference", "Wants daily jokes.", label="jokes"))
    ids["waiting"] = post_memory(api, memory_body("preference", "Likes jazz.", label="music"))
    decide(ids["tea"], True, decider)
    decide(ids["jokes"], False, decider, "not useful")
    deliver_through(api, session="s-2")
    deliver_through(api, session="s-2")  # nothing changed: the same composition again
    ids["new_name"] = post_memory(
        api,
        memory_body("profile", "The user's name is Douglas.", label="name", supersedes=ids["name"]),
    )
    revoke(ids["tea"], decider, "asked to forget")
    reopen(ids["jokes"], decider)
    edited = {name: value for name, value in config.items() if name != "revision"}
    edited["tone"] = "Plain."
    store_agent(team, "wren", AgentConfig.model_validate(edited), actor=decider, via=Via.ADMIN)
    deliver_through(api, model="claude")
    cases = [
        {"name": "the name", "kind": "profile", "content": "Name: Doug.", "label": "name",
         "expect": {"section": "user_profile"}},
        {"name": "ночь 🦊", "kind": "fact", "content": "A fox at night.", "tags": ["ночь"],
         "expect": {"section": None}},
    ]  # fmt: skip
    assert api.put("/api/agents/wren/routing-cases", {"cases": cases}).status_code == 200
    return ids


def deliver_through(api: ApiClient, slug: str = "wren", **body: str) -> dict[str, Any]:
    """``POST /api/agents/{slug}/deliveries``: the delivery as answered."""
    response = api.post(f"/api/agents/{slug}/deliveries", body)
    assert response.status_code == 201, response.content
    return dict(response.json())


def agent_state(agent: Agent) -> dict[str, Any]:
    """Everything a bundle carries of ``agent``, by ids and times (integer keys are
    this database's own): its declarations and row times, revisions, memories,
    promotions, events, deliveries with the composition each delivered, the live
    composition, and which memories a search finds."""
    agent = with_config(Agent.objects.filter(pk=agent.pk)).get()
    deliveries = Delivery.objects.filter(agent=agent).select_related("composition")
    return {
        "created_at": agent.created_at,
        "updated_at": agent.updated_at,
        "config": config_of(agent).model_dump(mode="json"),
        "revisions": list(
            Revision.objects.filter(agent=agent)
            .order_by("number")
            .values_list(
                "number", "created_at", "actor", "via", "approved_by", "config_id", "summary"
            )
        ),
        "routing_cases": list(
            RoutingCase.objects.filter(agent=agent)
            .order_by("position")
            .values_list("position", "name", "kind", "content", "tags", "label", "expect_section")
        ),
        "memories": list(
            MemoryRecord.objects.filter(agent=agent)
            .order_by("id")
            .values_list(
                "id",
                "kind",
                "content",
                "tags",
                "label",
                "supersedes_id",
                "created_at",
                "session",
                "valid_until",
            )
        ),
        "promotions": list(
            Promotion.objects.filter(agent=agent)
            .order_by("record_id")
            .values_list(
                "record_id",
                "section",
                "key",
                "placement_key",
                "key_source",
                "spec_key",
                "spec_version",
                "tier",
                "status",
                "reason",
                "promoted_at",
                "decided_by__username",
                "decided_at",
                "decision_note",
                "corroborates_id",
            )
        ),
        "migrated_promotions": list(
            MigratedPromotion.objects.filter(agent=agent)
            .order_by("migrated_at", "id")
            .values_list(
                "record_id",
                "section",
                "key",
                "placement_key",
                "key_source",
                "spec_key",
                "spec_version",
                "tier",
                "status",
                "previous_status",
                "reason",
                "promoted_at",
                "decided_by__username",
                "decided_at",
                "decision_note",
                "migrated_at",
                "migrated_by",
                "new_section",
                "new_key",
            )
        ),
        "events": list(
            MemoryEvent.objects.filter(agent=agent)
            .order_by("at", "id")
            .values_list("record_id", "kind", "actor", "actor_user__username", "detail", "at")
        ),
        "deliveries": [
            (
                d.id,
                d.delivered_at,
                d.session,
                d.model,
                d.revision,
                d.composition.prompt_sha256,
                d.composition.digest,
                composition_json(d.composition),
                sorted(d.composition.memory_ids.split()),
                # The prompt-cache figures it was recorded with (SPEC §17).
                d.cache_prefix_tokens,
                d.cache_prefix_chars,
                d.changed_section,
                d.changed_background_section,
            )
            for d in deliveries.order_by("delivered_at")
        ],
        "shaped_by": sorted(
            CompositionMemory.objects.filter(composition__agent=agent).values_list(
                "memory_id", "composition__digest"
            )
        ),
        "composition": compose(agent).canonical_json(),
        "found": sorted(search.search([agent.pk], "cafe zoe ночь douglas", None, 50, 0)),
    }


def bundle_text(data: bytes) -> list[bytes]:
    """A bundle's lines, each with its line break."""
    return gzip.decompress(data).splitlines(keepends=True)


def rebundle(lines: list[bytes], *, rehash: bool = True) -> bytes:
    """A bundle file of ``lines`` (the manifest first), its manifest's sha256 and counts
    made to match the rest when ``rehash``: a bundle written by hand."""
    if rehash:
        manifest = json.loads(lines[0])
        manifest["sha256"] = hashlib.sha256(b"".join(lines[1:])).hexdigest()
        counts = dict.fromkeys(manifest["counts"], 0)
        for line in lines[1:]:
            counts[json.loads(line)["type"]] += 1
        manifest["counts"] = counts
        lines = [json.dumps(manifest, ensure_ascii=False).encode() + b"\n", *lines[1:]]
    return gzip.compress(b"".join(lines), mtime=0)


# --- races -------------------------------------------------------------------------

T = TypeVar("T")


def race(n: int, fn: Callable[[int], T]) -> list[T]:
    """Call ``fn(0)`` … ``fn(n - 1)`` at once, each in its own thread released by one barrier.

    Each thread closes its own database connection when done. The answers come back in
    the order of ``i``; if any call raised, the first exception raised is raised here.
    """
    barrier = threading.Barrier(n)
    answers: list[Any] = [None] * n
    failures: list[BaseException] = []
    lock = threading.Lock()

    def run(i: int) -> None:
        try:
            barrier.wait(timeout=30)
            answers[i] = fn(i)
        except BaseException as exc:  # handed to the caller below, never swallowed
            with lock:
                failures.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads), "a racing thread hung"
    if failures:
        raise failures[0]
    return answers
