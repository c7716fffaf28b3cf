"""What the memories API refuses (SPEC §5.1, §8): invalid memories with 422 and a specific
code, bodies over one MiB with 413, missing or foreign tokens, and never a partial write.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from lens.models import Agent, Team
from tests.api_calls import (
    DOUG,
    ApiClient,
    assert_error,
    memories_listing,
    memory_body,
    post_memory,
)
from tests.factories import SOLO_CONFIG, create_agent, memory_row_counts, promotion_of

pytestmark = pytest.mark.django_db


ONE_MIB = 1024 * 1024


# --- validation: 422 with a specific code, and nothing written ---------------------

BAD_BODIES = [
    ("label-newline", memory_body(label="na\nme"), "invalid_label"),
    ("label-tab", memory_body(label="na\tme"), "invalid_label"),
    ("label-nul", memory_body(label="na\x00me"), "invalid_label"),
    ("label-line-separator", memory_body(label="na\u2028me"), "invalid_label"),
    ("label-paragraph-separator", memory_body(label="na\u2029me"), "invalid_label"),
    ("label-65", memory_body(label="n" * 65), "invalid_label"),
    ("label-empty", memory_body(label=""), "invalid_label"),
    ("label-number", memory_body(label=5), "invalid_label"),
    ("content-empty", memory_body(content=""), "invalid_content"),
    ("content-10001", memory_body(content="\U0001f600" * 10_001), "invalid_content"),
    ("content-missing", {"kind": "profile"}, "invalid_content"),
    ("kind-capital", memory_body(kind="Profile"), "invalid_kind"),
    ("kind-digit-first", memory_body(kind="1x"), "invalid_kind"),
    ("kind-33", memory_body(kind="k" * 33), "invalid_kind"),
    ("kind-missing", {"content": DOUG}, "invalid_kind"),
    ("tags-33", memory_body(tags=[f"t{n}" for n in range(33)]), "invalid_tags"),
    ("tag-control", memory_body(tags=["ok", "b\x07d"]), "invalid_tags"),
    ("tag-empty", memory_body(tags=[""]), "invalid_tags"),
    ("tag-65", memory_body(tags=["t" * 65]), "invalid_tags"),
    ("target", memory_body(target="user_profile"), "invalid_request"),
    ("payload", memory_body(payload={"section": "user_profile"}), "invalid_request"),
]


@pytest.mark.parametrize(
    ("body", "code"), [b[1:] for b in BAD_BODIES], ids=[b[0] for b in BAD_BODIES]
)
def test_an_invalid_memory_is_refused_with_its_code_and_nothing_is_written(
    api: ApiClient, wren: Agent, body: dict[str, Any], code: str
) -> None:
    post_memory(api, memory_body("profile", "An earlier memory.", label="earlier"))
    before = memory_row_counts()
    error = assert_error(api.post("/api/agents/wren/memories", body), 422, code)
    assert memory_row_counts() == before
    assert error["message"]


def test_a_body_that_is_not_json_is_refused_and_nothing_is_written(
    api: ApiClient, wren: Agent
) -> None:
    before = memory_row_counts()
    for raw in ("{not json", "", "[]", '"text"'):
        assert_error(api.post("/api/agents/wren/memories", raw=raw), 422)
    assert_error(api.post("/api/agents/wren/memories", raw="{not json"), 422, "invalid_request")
    assert memory_row_counts() == before


def test_an_unknown_supersedes_is_refused_and_nothing_is_written(
    api: ApiClient, wren: Agent
) -> None:
    before = memory_row_counts()
    for unknown in ("zzzzzzzzzzzzzzzzzz", "not an id!"):
        error = assert_error(
            api.post("/api/agents/wren/memories", memory_body(supersedes=unknown)),
            422,
            "unknown_supersedes",
        )
        assert unknown in error["message"]
    assert memory_row_counts() == before


def test_superseding_another_agents_record_is_unknown_supersedes(
    api: ApiClient, team: Team, wren: Agent
) -> None:
    create_agent(team, "solo", SOLO_CONFIG)
    theirs = post_memory(api, memory_body("episode", "Solo's memory."), "solo")
    before = memory_row_counts()
    assert_error(
        api.post("/api/agents/wren/memories", memory_body(supersedes=theirs)),
        422,
        "unknown_supersedes",
    )
    assert memory_row_counts() == before
    assert promotion_of(theirs).status == "declined"


def test_a_body_over_one_mib_is_refused_with_413_and_nothing_is_written(
    api: ApiClient, wren: Agent
) -> None:
    before = memory_row_counts()
    raw = json.dumps(memory_body(content="x" * ONE_MIB))
    error = assert_error(api.post("/api/agents/wren/memories", raw=raw), 413, "payload_too_large")
    assert error["limit"] == ONE_MIB
    assert memory_row_counts() == before


def test_the_limits_themselves_are_accepted(api: ApiClient, wren: Agent) -> None:
    record_id = post_memory(
        api,
        {
            "kind": "k" * 32,
            "content": "\U0001f600" * 10_000,
            "tags": [f"{n:02d}" + "t" * 62 for n in range(32)],
            "label": "l" * 64,
        },
    )
    (view,) = memories_listing(api)["memories"]
    assert view["id"] == record_id
    assert len(view["content"]) == 10_000
    assert len(view["tags"]) == 32
    assert all(len(tag) == 64 for tag in view["tags"])


def test_duplicate_tags_are_removed_and_newlines_in_content_are_kept(
    api: ApiClient, wren: Agent
) -> None:
    post_memory(api, memory_body("episode", "line one\nline two", tags=["a", "b", "a"]))
    (view,) = memories_listing(api)["memories"]
    assert view["tags"] == ["a", "b"]
    assert view["content"] == "line one\nline two"


# --- authentication and team isolation ---------------------------------------------


def test_saving_and_listing_without_a_token_is_401_and_writes_nothing(
    anon_api: ApiClient, wren: Agent
) -> None:
    before = memory_row_counts()
    assert_error(
        anon_api.post("/api/agents/wren/memories", memory_body(label="name")), 401, "unauthorized"
    )
    assert_error(anon_api.get("/api/agents/wren/memories"), 401, "unauthorized")
    assert memory_row_counts() == before


def test_another_teams_token_sees_no_agent_and_writes_nothing(
    api: ApiClient, other_api: ApiClient, wren: Agent
) -> None:
    post_memory(api, memory_body(label="name"))
    before = memory_row_counts()
    for response in (
        other_api.post("/api/agents/wren/memories", memory_body(label="other")),
        other_api.get("/api/agents/wren/memories"),
        other_api.get("/api/agents/wren/composition"),
    ):
        assert_error(response, 404, "agent_not_found")
    assert memory_row_counts() == before


def test_an_unknown_agent_is_404(api: ApiClient, wren: Agent) -> None:
    assert_error(api.post("/api/agents/nobody/memories", memory_body()), 404, "agent_not_found")
    assert_error(api.get("/api/agents/nobody/memories"), 404, "agent_not_found")
