"""The memories API (SPEC §3.2, §5.1, §5.4, §5.6, §8): save, gate, list, compose."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from lens.actors import Actor
from lens.models import Agent, ApiToken, Team
from memory.decisions import decide
from memory.models import MemoryEvent, MemoryRecord, Promotion
from tests.factories import SAMPLE_CONFIG, ApiClient, create_agent

pytestmark = pytest.mark.django_db

ONE_MIB = 1024 * 1024
SNAKE_CASE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*")
VIEW_KEYS = {"id", "kind", "content", "tags", "label", "supersedes", "created_at"}
HINT = "supersede it or use a different label"
DOUG = "The user's name is Doug."

# The preset's two sections as it expects them, plus an authored locked section.
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
# Only one of the preset's sections: preferences route to an undeclared section.
SOLO_CONFIG: dict[str, Any] = {
    **WREN_CONFIG,
    "name": "Solo",
    "background": {
        "sections": [{"id": "user_profile", "title": "About the User", "promotion": "auto"}]
    },
}
# No routing spec at all: every memory is spec-declined.
PLAIN_CONFIG: dict[str, Any] = {**SOLO_CONFIG, "name": "Plain", "routing_spec": None}


# --- helpers ---------------------------------------------------------------------------


@pytest.fixture
def wren(team: Team) -> Agent:
    return create_agent(team, "wren", WREN_CONFIG)


@pytest.fixture
def token_prefix(team: Team, api: ApiClient) -> str:
    return ApiToken.objects.get(team=team).prefix


def memory(kind: str = "profile", content: str = DOUG, **extra: Any) -> dict[str, Any]:
    return {"kind": kind, "content": content, **extra}


def save(client: ApiClient, body: dict[str, Any], slug: str = "wren") -> str:
    """Save a memory that must be accepted; return its id."""
    response = client.post(f"/api/agents/{slug}/memories", body)
    assert response.status_code == 201, response.content
    answer = response.json()
    assert answer == {"status": "saved", "id": answer["id"]}
    assert re.fullmatch(r"[0-9a-z]+", answer["id"])
    return str(answer["id"])


def conflict(client: ApiClient, body: dict[str, Any], slug: str = "wren") -> dict[str, Any]:
    """Save a memory that must be refused by the collision gate; return the answer."""
    response = client.post(f"/api/agents/{slug}/memories", body)
    assert response.status_code == 409, response.content
    answer = response.json()
    assert set(answer) == {"status", "existing", "message"}
    assert answer["status"] == "conflict"
    assert set(answer["existing"]) == VIEW_KEYS
    assert HINT in answer["message"]
    return dict(answer)


def assert_error(response: Any, status: int, code: str | None = None) -> dict[str, Any]:
    """The response is the error envelope ``{"error": {"code", "message", ...}}``."""
    assert response.status_code == status, response.content
    body = response.json()
    assert set(body) == {"error"}
    error = body["error"]
    assert SNAKE_CASE.fullmatch(error["code"]), error
    assert isinstance(error["message"], str) and error["message"].strip()
    if code is not None:
        assert error["code"] == code, error
    return dict(error)


def written() -> tuple[int, int, int]:
    """How many records, promotion rows and events exist."""
    return (
        MemoryRecord.objects.count(),
        Promotion.objects.count(),
        MemoryEvent.objects.count(),
    )


def composition(client: ApiClient, slug: str = "wren") -> dict[str, Any]:
    response = client.get(f"/api/agents/{slug}/composition")
    assert response.status_code == 200, response.content
    return dict(response.json())


def fragments(composed: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for section in composed["prompt"]["sections"] for f in section["fragments"]]


def memory_fragments(composed: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in fragments(composed) if f["source"] == "memory"]


def composed_ids(composed: dict[str, Any]) -> list[str]:
    return [mid for f in fragments(composed) for mid in f.get("memory_ids") or []]


def drops(composed: dict[str, Any]) -> dict[str, str]:
    return {drop["memory_id"]: drop["reason"] for drop in composed["report"]["drops"]}


def prompt_text(composed: dict[str, Any]) -> str:
    return "\n\n".join(
        "".join(f["text"] for f in section["fragments"])
        for section in composed["prompt"]["sections"]
    )


def section_entries(composed: dict[str, Any], section_id: str) -> list[dict[str, Any]]:
    (section,) = [s for s in composed["background"]["sections"] if s["id"] == section_id]
    return list(section["entries"])


def assert_every_memory_accounted_for(composed: dict[str, Any], agent: Agent) -> None:
    """SPEC §5.6: each memory is in some fragment's memory_ids or in the drops, once."""
    ids = set(MemoryRecord.objects.filter(agent=agent).values_list("id", flat=True))
    in_prompt = composed_ids(composed)
    dropped = [drop["memory_id"] for drop in composed["report"]["drops"]]
    assert len(dropped) == len(set(dropped))
    assert set(in_prompt).isdisjoint(dropped)
    assert set(in_prompt) | set(dropped) == ids


def promotion_of(record_id: str) -> Promotion:
    return Promotion.objects.get(record_id=record_id)


def event_kinds(record_id: str) -> list[str]:
    return list(
        MemoryEvent.objects.filter(record_id=record_id)
        .order_by("id")
        .values_list("kind", flat=True)
    )


def assert_saved_by_token(record_id: str, prefix: str) -> None:
    saved = MemoryEvent.objects.get(record_id=record_id, kind="saved")
    assert prefix in saved.actor
    assert saved.actor_token is not None and saved.actor_token.prefix == prefix


def listing(client: ApiClient, query: str = "", slug: str = "wren") -> dict[str, Any]:
    response = client.get(f"/api/agents/{slug}/memories{query}")
    assert response.status_code == 200, response.content
    return dict(response.json())


# --- saving: the answer never reveals routing -------------------------------------------


OUTCOMES = [
    # (agent config, body, status, reason, section, tier)
    ("wren", memory("profile", DOUG, label="name"), "approved", "", "user_profile", "auto"),
    (
        "wren",
        memory("preference", "Prefers dark mode.", label="theme"),
        "pending",
        "",
        "user_preferences",
        "guarded",
    ),
    (
        "vault",
        memory("profile", DOUG, label="name"),
        "declined",
        "locked-section",
        "user_profile",
        "locked",
    ),
    (
        "vault",
        memory("preference", "Prefers dark mode.", label="theme"),
        "declined",
        "earned-inert",
        "user_preferences",
        "earned",
    ),
    (
        "solo",
        memory("preference", "Prefers dark mode.", label="theme"),
        "declined",
        "undeclared-section",
        "user_preferences",
        None,
    ),
    (
        "wren",
        memory("episode", "We talked about trains.", label="trains"),
        "declined",
        "spec-declined",
        None,
        None,
    ),
    ("plain", memory("profile", DOUG, label="name"), "declined", "spec-declined", None, None),
]
CONFIGS = {"wren": WREN_CONFIG, "vault": VAULT_CONFIG, "solo": SOLO_CONFIG, "plain": PLAIN_CONFIG}
EVENT_OF_STATUS = {"approved": "promoted", "pending": "queued", "declined": "declined"}
DROP_OF = {"approved": None, "pending": "awaiting-approval"}


@pytest.mark.parametrize(
    ("slug", "body", "status", "reason", "section", "tier"),
    OUTCOMES,
    ids=[
        "auto",
        "guarded",
        "locked-section",
        "earned-inert",
        "undeclared-section",
        "spec-declined",
        "no-spec",
    ],
)
def test_every_outcome_answers_only_saved_and_commits_its_promotion_row(
    api: ApiClient,
    team: Team,
    token_prefix: str,
    slug: str,
    body: dict[str, Any],
    status: str,
    reason: str,
    section: str | None,
    tier: str | None,
) -> None:
    agent = create_agent(team, slug, CONFIGS[slug])
    response = api.post(f"/api/agents/{slug}/memories", body)

    assert response.status_code == 201
    answer = response.json()
    assert set(answer) == {"status", "id"}  # never where, or whether, it composed
    assert answer["status"] == "saved"
    record_id = answer["id"]

    record = MemoryRecord.objects.get(pk=record_id)
    assert record.agent_id == agent.pk
    assert (record.kind, record.content, record.label) == (
        body["kind"],
        body["content"],
        body["label"],
    )

    promotion = promotion_of(record_id)
    assert promotion.agent_id == agent.pk
    assert promotion.status == status
    assert promotion.reason == reason
    assert promotion.section == section
    assert promotion.tier == tier
    if section is None:
        assert promotion.key is None and promotion.placement_key is None
        assert promotion.key_source is None
    else:
        assert promotion.key == body["label"]
        assert json.loads(promotion.placement_key) == [section, promotion.key]
        assert promotion.key_source == "label"
    spec = CONFIGS[slug]["routing_spec"]
    assert promotion.spec_key == (spec or "")
    assert promotion.spec_version == ("1" if spec else "")
    assert promotion.promoted_at == record.created_at

    assert event_kinds(record_id) == ["saved", EVENT_OF_STATUS[status]]
    assert_saved_by_token(record_id, token_prefix)
    assert (
        MemoryEvent.objects.get(record_id=record_id, kind=EVENT_OF_STATUS[status]).actor == "system"
    )

    composed = composition(api, slug)
    expected_drop = reason or DROP_OF[status]
    if expected_drop is None:
        assert composed_ids(composed) == [record_id]
        assert drops(composed) == {}
    else:
        assert composed_ids(composed) == []
        assert drops(composed) == {record_id: expected_drop}
    assert_every_memory_accounted_for(composed, agent)


def test_an_auto_memory_composes_under_its_section_title_as_one_memory_fragment(
    api: ApiClient, wren: Agent
) -> None:
    before = composition(api)
    record_id = save(api, memory("profile", DOUG, label="name"))
    composed = composition(api)

    assert composed["spec"] == {"key": "user-background", "version": "1"}
    assert section_entries(composed, "user_profile") == [
        {"key": "name", "value": DOUG, "memory_ids": [record_id]}
    ]
    (fragment,) = memory_fragments(composed)
    assert fragment == {
        "source": "memory",
        "text": f"- **name**: {DOUG}\n",
        "memory_ids": [record_id],
    }
    (context,) = [s for s in composed["prompt"]["sections"] if s["name"] == "Context"]
    texts = [f["text"] for f in context["fragments"]]
    position = texts.index(fragment["text"])
    assert texts[position - 1].endswith("### About the User\n")
    assert context["fragments"][position - 1]["source"] == "authored"
    assert composed["counts"] == {
        **before["counts"],
        "sections": 3,
        "entries": before["counts"]["entries"] + 1,
    }


def test_the_motivating_scenario_puts_dougs_name_under_about_the_user(
    api: ApiClient, wren: Agent
) -> None:
    save(api, memory("profile", "The user's name is Doug.", label="name"))
    prompt = prompt_text(composition(api))
    assert "### About the User\n- **name**: The user's name is Doug.\n" in prompt


def test_a_guarded_memory_waits_and_is_reported_awaiting_approval(
    api: ApiClient, wren: Agent
) -> None:
    record_id = save(api, memory("preference", "Prefers dark mode.", label="theme"))
    composed = composition(api)
    assert "Prefers dark mode." not in prompt_text(composed)
    assert section_entries(composed, "user_preferences") == []
    assert drops(composed) == {record_id: "awaiting-approval"}
    assert composed["report"]["stats"]["drops_by_reason"] == {"awaiting-approval": 1}


def test_the_answer_is_identical_in_shape_whatever_the_outcome(api: ApiClient, wren: Agent) -> None:
    bodies = [
        memory("profile", DOUG, label="name"),
        memory("preference", "Tea, not coffee.", label="drink"),
        memory("episode", "We talked."),
    ]
    answers = [api.post("/api/agents/wren/memories", body) for body in bodies]
    assert [a.status_code for a in answers] == [201, 201, 201]
    assert [sorted(a.json()) for a in answers] == [["id", "status"]] * 3
    assert {a["Content-Type"] for a in answers} == {"application/json; charset=utf-8"}


def test_declined_outcomes_hold_no_address(api: ApiClient, team: Team) -> None:
    create_agent(team, "vault", VAULT_CONFIG)
    first = save(api, memory("profile", DOUG, label="name"), "vault")
    second = save(api, memory("profile", "Doug again.", label="name"), "vault")
    assert promotion_of(first).status == promotion_of(second).status == "declined"


# --- the collision gate -----------------------------------------------------------------


def test_a_second_save_to_the_same_label_conflicts_and_writes_nothing(
    api: ApiClient, wren: Agent
) -> None:
    holder = save(api, memory("profile", DOUG, label="name", tags=["identity"]))
    before = written()
    holder_promotion = promotion_of(holder)

    answer = conflict(api, memory("profile", "The user's name is Douglas.", label="name"))

    existing = answer["existing"]
    assert existing["id"] == holder
    assert existing == listing(api)["memories"][0]
    assert existing["kind"] == "profile"
    assert existing["content"] == DOUG
    assert existing["tags"] == ["identity"]
    assert existing["label"] == "name"
    assert existing["supersedes"] is None
    assert (
        datetime.fromisoformat(existing["created_at"])
        == MemoryRecord.objects.get(pk=holder).created_at
    )
    assert written() == before
    assert promotion_of(holder).status == holder_promotion.status == "approved"
    assert "Douglas" not in prompt_text(composition(api))


@pytest.mark.parametrize("label", ["Name ", "NAME", "name", " name"])
def test_labels_that_slug_alike_share_one_address(api: ApiClient, wren: Agent, label: str) -> None:
    holder = save(api, memory("profile", DOUG, label="name"))
    before = written()
    assert conflict(api, memory("profile", "Doug.", label=label))["existing"]["id"] == holder
    assert written() == before


def test_the_same_label_in_another_section_is_another_address(api: ApiClient, wren: Agent) -> None:
    save(api, memory("profile", DOUG, label="name"))
    save(api, memory("preference", "Call me Doug.", label="name"))


def test_a_pending_holder_blocks_the_address(api: ApiClient, wren: Agent) -> None:
    holder = save(api, memory("preference", "Prefers dark mode.", label="theme"))
    before = written()
    answer = conflict(api, memory("preference", "Prefers light mode.", label="Theme"))
    assert answer["existing"]["id"] == holder
    assert written() == before
    assert promotion_of(holder).status == "pending"


def test_a_rejected_memory_no_longer_holds_its_address(
    api: ApiClient, wren: Agent, member: User
) -> None:
    rejected = save(api, memory("preference", "Prefers dark mode.", label="theme"))
    decide(rejected, approve=False, actor=Actor.for_user(member))
    newer = save(api, memory("preference", "Prefers light mode.", label="theme"))
    assert drops(composition(api)) == {rejected: "rejected", newer: "awaiting-approval"}


def test_superseding_the_holder_replaces_it_in_the_composition(
    api: ApiClient, wren: Agent, token_prefix: str
) -> None:
    older = save(api, memory("profile", DOUG, label="name"))
    newer = save(
        api, memory("profile", "The user's name is Douglas.", label="name", supersedes=older)
    )

    assert promotion_of(older).status == "superseded"
    assert promotion_of(newer).status == "approved"
    assert MemoryRecord.objects.get(pk=newer).supersedes_id == older
    superseded = MemoryEvent.objects.get(record_id=older, kind="superseded")
    assert token_prefix in superseded.actor
    assert superseded.detail == {"by": newer}
    assert event_kinds(older) == ["saved", "promoted", "superseded"]
    assert event_kinds(newer) == ["saved", "promoted"]

    composed = composition(api)
    assert section_entries(composed, "user_profile") == [
        {"key": "name", "value": "The user's name is Douglas.", "memory_ids": [newer]}
    ]
    assert composed_ids(composed) == [newer]
    assert drops(composed) == {older: "superseded"}
    assert DOUG not in prompt_text(composed)
    assert_every_memory_accounted_for(composed, wren)
    assert listing(api)["memories"][0]["supersedes"] == older


def test_superseding_is_immediate_even_when_the_newer_one_waits_for_approval(
    api: ApiClient, wren: Agent
) -> None:
    older = save(api, memory("profile", DOUG, label="name"))
    newer = save(api, memory("preference", "Call him Doug.", label="address", supersedes=older))
    composed = composition(api)
    assert drops(composed) == {older: "superseded", newer: "awaiting-approval"}
    assert composed_ids(composed) == []


def test_superseding_a_pending_holder_takes_over_its_address(api: ApiClient, wren: Agent) -> None:
    older = save(api, memory("preference", "Prefers dark mode.", label="theme"))
    newer = save(api, memory("preference", "Prefers light mode.", label="theme", supersedes=older))
    assert promotion_of(older).status == "superseded"
    assert promotion_of(newer).status == "pending"
    assert conflict(api, memory("preference", "Sepia.", label="theme"))["existing"]["id"] == newer


def test_superseding_a_record_that_does_not_hold_the_address_conflicts(
    api: ApiClient, wren: Agent
) -> None:
    holder = save(api, memory("profile", DOUG, label="name"))
    bystander = save(api, memory("episode", "We talked about trains."))
    before = written()

    answer = conflict(api, memory("profile", "Douglas.", label="name", supersedes=bystander))

    assert answer["existing"]["id"] == holder
    assert written() == before
    assert promotion_of(bystander).status == "declined"
    assert promotion_of(holder).status == "approved"


def test_superseding_a_spec_declined_record_retires_it(api: ApiClient, wren: Agent) -> None:
    older = save(api, memory("episode", "We talked about trains."))
    newer = save(api, memory("episode", "We talked about boats.", supersedes=older))
    assert promotion_of(older).status == "superseded"
    assert event_kinds(older) == ["saved", "declined", "superseded"]
    composed = composition(api)
    assert drops(composed) == {older: "superseded", newer: "spec-declined"}
    assert_every_memory_accounted_for(composed, wren)


def test_a_routed_memory_may_supersede_a_spec_declined_one(api: ApiClient, wren: Agent) -> None:
    older = save(api, memory("episode", "He said his name is Doug."))
    newer = save(api, memory("profile", DOUG, label="name", supersedes=older))
    composed = composition(api)
    assert drops(composed) == {older: "superseded"}
    assert composed_ids(composed) == [newer]


@pytest.mark.parametrize(
    "variant",
    ["the user likes trains.", "  The   user likes\ntrains.  ", "THE USER LIKES TRAINS."],
)
def test_content_keyed_saves_of_the_same_content_collide(
    api: ApiClient, wren: Agent, variant: str
) -> None:
    holder = save(api, memory("profile", "The user likes trains."))
    promotion = promotion_of(holder)
    assert promotion.key_source == "content"
    assert promotion.key
    assert json.loads(promotion.placement_key) == ["user_profile", promotion.key]
    before = written()
    assert conflict(api, memory("profile", variant))["existing"]["id"] == holder
    assert written() == before


def test_content_keyed_saves_of_different_content_do_not_collide(
    api: ApiClient, wren: Agent
) -> None:
    first = save(api, memory("profile", "The user likes trains."))
    second = save(api, memory("profile", "The user likes boats."))
    assert promotion_of(first).key != promotion_of(second).key
    composed = composition(api)
    assert sorted(composed_ids(composed)) == sorted([first, second])
    assert [e["memory_ids"] for e in section_entries(composed, "user_profile")] == [
        [first],
        [second],
    ]


# --- validation: 422 with a specific code, and nothing written --------------------------


BAD_BODIES = [
    ("label-newline", memory(label="na\nme"), "invalid_label"),
    ("label-tab", memory(label="na\tme"), "invalid_label"),
    ("label-nul", memory(label="na\x00me"), "invalid_label"),
    ("label-line-separator", memory(label="na\u2028me"), "invalid_label"),
    ("label-paragraph-separator", memory(label="na\u2029me"), "invalid_label"),
    ("label-65", memory(label="n" * 65), "invalid_label"),
    ("label-empty", memory(label=""), "invalid_label"),
    ("label-number", memory(label=5), "invalid_label"),
    ("content-empty", memory(content=""), "invalid_content"),
    ("content-10001", memory(content="\U0001f600" * 10_001), "invalid_content"),
    ("content-missing", {"kind": "profile"}, "invalid_content"),
    ("kind-capital", memory(kind="Profile"), "invalid_kind"),
    ("kind-digit-first", memory(kind="1x"), "invalid_kind"),
    ("kind-33", memory(kind="k" * 33), "invalid_kind"),
    ("kind-missing", {"content": DOUG}, "invalid_kind"),
    ("tags-33", memory(tags=[f"t{n}" for n in range(33)]), "invalid_tags"),
    ("tag-control", memory(tags=["ok", "b\x07d"]), "invalid_tags"),
    ("tag-empty", memory(tags=[""]), "invalid_tags"),
    ("tag-65", memory(tags=["t" * 65]), "invalid_tags"),
    ("target", memory(target="user_profile"), "invalid_request"),
    ("payload", memory(payload={"section": "user_profile"}), "invalid_request"),
]


@pytest.mark.parametrize(
    ("body", "code"), [b[1:] for b in BAD_BODIES], ids=[b[0] for b in BAD_BODIES]
)
def test_an_invalid_memory_is_refused_with_its_code_and_nothing_is_written(
    api: ApiClient, wren: Agent, body: dict[str, Any], code: str
) -> None:
    save(api, memory("profile", "An earlier memory.", label="earlier"))
    before = written()
    error = assert_error(api.post("/api/agents/wren/memories", body), 422, code)
    assert written() == before
    assert error["message"]


def test_a_body_that_is_not_json_is_refused_and_nothing_is_written(
    api: ApiClient, wren: Agent
) -> None:
    before = written()
    for raw in ("{not json", "", "[]", '"text"'):
        assert_error(api.post("/api/agents/wren/memories", raw=raw), 422)
    assert_error(api.post("/api/agents/wren/memories", raw="{not json"), 422, "invalid_request")
    assert written() == before


def test_an_unknown_supersedes_is_refused_and_nothing_is_written(
    api: ApiClient, wren: Agent
) -> None:
    before = written()
    for unknown in ("zzzzzzzzzzzzzzzzzz", "not an id!"):
        error = assert_error(
            api.post("/api/agents/wren/memories", memory(supersedes=unknown)),
            422,
            "unknown_supersedes",
        )
        assert unknown in error["message"]
    assert written() == before


def test_superseding_another_agents_record_is_unknown_supersedes(
    api: ApiClient, team: Team, wren: Agent
) -> None:
    create_agent(team, "solo", SOLO_CONFIG)
    theirs = save(api, memory("episode", "Solo's memory."), "solo")
    before = written()
    assert_error(
        api.post("/api/agents/wren/memories", memory(supersedes=theirs)), 422, "unknown_supersedes"
    )
    assert written() == before
    assert promotion_of(theirs).status == "declined"


def test_a_body_over_one_mib_is_refused_with_413_and_nothing_is_written(
    api: ApiClient, wren: Agent
) -> None:
    before = written()
    raw = json.dumps(memory(content="x" * ONE_MIB))
    error = assert_error(api.post("/api/agents/wren/memories", raw=raw), 413, "payload_too_large")
    assert error["limit"] == ONE_MIB
    assert written() == before


def test_the_limits_themselves_are_accepted(api: ApiClient, wren: Agent) -> None:
    record_id = save(
        api,
        {
            "kind": "k" * 32,
            "content": "\U0001f600" * 10_000,
            "tags": [f"{n:02d}" + "t" * 62 for n in range(32)],
            "label": "l" * 64,
        },
    )
    (view,) = listing(api)["memories"]
    assert view["id"] == record_id
    assert len(view["content"]) == 10_000
    assert len(view["tags"]) == 32 and all(len(tag) == 64 for tag in view["tags"])


def test_duplicate_tags_are_removed_and_newlines_in_content_are_kept(
    api: ApiClient, wren: Agent
) -> None:
    save(api, memory("episode", "line one\nline two", tags=["a", "b", "a"]))
    (view,) = listing(api)["memories"]
    assert view["tags"] == ["a", "b"]
    assert view["content"] == "line one\nline two"


# --- authentication and team isolation --------------------------------------------------


def test_saving_and_listing_without_a_token_is_401_and_writes_nothing(
    anon_api: ApiClient, wren: Agent
) -> None:
    before = written()
    assert_error(
        anon_api.post("/api/agents/wren/memories", memory(label="name")), 401, "unauthorized"
    )
    assert_error(anon_api.get("/api/agents/wren/memories"), 401, "unauthorized")
    assert written() == before


def test_another_teams_token_sees_no_agent_and_writes_nothing(
    api: ApiClient, other_api: ApiClient, wren: Agent
) -> None:
    save(api, memory(label="name"))
    before = written()
    for response in (
        other_api.post("/api/agents/wren/memories", memory(label="other")),
        other_api.get("/api/agents/wren/memories"),
        other_api.get("/api/agents/wren/composition"),
    ):
        assert_error(response, 404, "agent_not_found")
    assert written() == before


def test_an_unknown_agent_is_404(api: ApiClient, wren: Agent) -> None:
    assert_error(api.post("/api/agents/nobody/memories", memory()), 404, "agent_not_found")
    assert_error(api.get("/api/agents/nobody/memories"), 404, "agent_not_found")


# --- listing ----------------------------------------------------------------------------


def test_the_listing_is_newest_first_with_the_contract_view(api: ApiClient, wren: Agent) -> None:
    ids = [
        save(api, memory("profile", DOUG, label="name", tags=["identity"])),
        save(api, memory("preference", "Tea.", label="drink")),
        save(api, memory("episode", "We talked.")),
    ]
    page = listing(api)
    assert page["skipped"] == 0
    assert [view["id"] for view in page["memories"]] == ids[::-1]
    for view in page["memories"]:
        assert set(view) == VIEW_KEYS
    assert page["memories"][-1] == {
        "id": ids[0],
        "kind": "profile",
        "content": DOUG,
        "tags": ["identity"],
        "label": "name",
        "supersedes": None,
        "created_at": page["memories"][-1]["created_at"],
    }
    stamp = datetime.fromisoformat(page["memories"][-1]["created_at"])
    assert stamp.utcoffset() is not None and stamp.utcoffset().total_seconds() == 0


def test_records_sharing_a_timestamp_are_listed_by_id_ascending(
    api: ApiClient, wren: Agent
) -> None:
    ids = [save(api, memory("episode", f"Batch {n}.")) for n in range(4)]
    newest = save(api, memory("episode", "Later."))
    moment = MemoryRecord.objects.get(pk=ids[0]).created_at
    MemoryRecord.objects.filter(pk__in=ids).update(created_at=moment)
    listed = [view["id"] for view in listing(api)["memories"]]
    assert listed == [newest, *sorted(ids)]


def test_the_listing_filters_by_kind(api: ApiClient, wren: Agent) -> None:
    profile = save(api, memory("profile", DOUG, label="name"))
    save(api, memory("episode", "We talked."))
    assert [view["id"] for view in listing(api, "?kind=profile")["memories"]] == [profile]
    assert listing(api, "?kind=decision")["memories"] == []


def test_the_listing_pages_with_limit_offset_and_next_offset(api: ApiClient, wren: Agent) -> None:
    ids = [save(api, memory("episode", f"Memory {n}.")) for n in range(5)][::-1]
    first = listing(api, "?limit=2")
    assert [v["id"] for v in first["memories"]] == ids[:2]
    assert (first["limit"], first["offset"], first["next_offset"]) == (2, 0, 2)
    second = listing(api, "?limit=2&offset=2")
    assert [v["id"] for v in second["memories"]] == ids[2:4]
    assert second["next_offset"] == 4
    last = listing(api, "?limit=2&offset=4")
    assert [v["id"] for v in last["memories"]] == ids[4:]
    assert last["next_offset"] is None
    assert listing(api, "?limit=1")["next_offset"] == 1
    assert listing(api, "?limit=200")["next_offset"] is None
    assert listing(api, "?offset=9")["memories"] == []
    default = listing(api)
    assert (default["limit"], default["offset"], default["next_offset"]) == (50, 0, None)


@pytest.mark.parametrize("query", ["?limit=0", "?limit=201", "?offset=-1", "?limit=x"])
def test_the_listing_refuses_bad_paging(api: ApiClient, wren: Agent, query: str) -> None:
    assert_error(api.get(f"/api/agents/wren/memories{query}"), 422)


def test_the_listing_with_a_query_answers_search_unavailable(api: ApiClient, wren: Agent) -> None:
    save(api, memory(label="name"))
    error = assert_error(api.get("/api/agents/wren/memories?q=doug"), 422, "search_unavailable")
    assert error["message"]


@pytest.mark.parametrize(
    "corruption", [{"kind": "NOT A KIND"}, {"tags": ["x" * 100]}, {"content": ""}]
)
def test_a_corrupt_row_costs_one_record_not_the_listing(
    api: ApiClient, wren: Agent, corruption: dict[str, Any]
) -> None:
    ids = [
        save(api, memory("profile", DOUG, label="name")),
        save(api, memory("episode", "We talked.")),
        save(api, memory("preference", "Tea.", label="drink")),
    ]
    MemoryRecord.objects.filter(pk=ids[1]).update(**corruption)
    page = listing(api)
    assert [view["id"] for view in page["memories"]] == [ids[2], ids[0]]
    assert page["skipped"] == 1
    composition(api)  # the composition still answers


def test_sequential_saves_get_strictly_increasing_timestamps(api: ApiClient, wren: Agent) -> None:
    ids = [save(api, memory("episode", f"Memory {n}.")) for n in range(8)]
    stamps = [MemoryRecord.objects.get(pk=record_id).created_at for record_id in ids]
    assert all(a < b for a, b in zip(stamps, stamps[1:], strict=False))
    listed = [datetime.fromisoformat(v["created_at"]) for v in listing(api)["memories"]]
    assert listed == stamps[::-1]


def test_a_save_after_a_timestamp_in_the_future_still_increases(
    api: ApiClient, wren: Agent
) -> None:
    first = save(api, memory("episode", "First."))
    future = timezone.now() + timedelta(hours=1)
    MemoryRecord.objects.filter(pk=first).update(created_at=future)
    second = save(api, memory("episode", "Second."))
    assert MemoryRecord.objects.get(pk=second).created_at > future


# --- the composition with memories ------------------------------------------------------


def test_the_composition_accounts_for_every_memory_and_reports_ids_only(
    api: ApiClient, wren: Agent, member: User
) -> None:
    name = save(api, memory("profile", DOUG, label="name"))
    city = save(api, memory("profile", "Lives in Leeds.", label="city"))
    theme = save(api, memory("preference", "Prefers dark mode.", label="theme"))
    drink = save(api, memory("preference", "Tea, not coffee.", label="drink"))
    decide(drink, approve=False, actor=Actor.for_user(member))
    episode = save(api, memory("episode", "We talked about trains."))
    older = save(api, memory("profile", "Born in 1970.", label="born"))
    newer = save(api, memory("profile", "Born in 1971.", label="born", supersedes=older))

    composed = composition(api)

    assert composed["agent"] == "wren"
    assert composed["spec"] == {"key": "user-background", "version": "1"}
    assert sorted(composed_ids(composed)) == sorted([name, city, newer])
    assert drops(composed) == {
        theme: "awaiting-approval",
        drink: "rejected",
        episode: "spec-declined",
        older: "superseded",
    }
    for drop in composed["report"]["drops"]:
        assert set(drop) == {"memory_id", "reason"}
    report_text = json.dumps(composed["report"])
    for content in (DOUG, "Prefers dark mode.", "Tea, not coffee.", "trains", "1970"):
        assert content not in report_text
    assert_every_memory_accounted_for(composed, wren)
    # One authored entry plus three memory entries, in three declared sections.
    assert composed["counts"] == {"sections": 3, "entries": 4}
    assert [e["memory_ids"] for e in section_entries(composed, "user_profile")] == [
        [name],
        [city],
        [newer],
    ]
    for fragment in memory_fragments(composed):
        assert len(fragment["memory_ids"]) == 1


def test_the_agent_list_counts_memory_entries(api: ApiClient, wren: Agent) -> None:
    def wren_counts() -> dict[str, int]:
        (summary,) = [a for a in api.get("/api/agents").json()["agents"] if a["slug"] == "wren"]
        return dict(summary["counts"])

    assert wren_counts() == {"sections": 3, "entries": 1}
    save(api, memory("profile", DOUG, label="name"))
    save(api, memory("preference", "Tea.", label="drink"))  # pending: not composed
    assert wren_counts() == {"sections": 3, "entries": 2}
    assert wren_counts() == composition(api)["counts"]


def test_the_composition_records_nothing(api: ApiClient, wren: Agent) -> None:
    save(api, memory("profile", DOUG, label="name"))
    before = written()
    composition(api)
    assert written() == before
