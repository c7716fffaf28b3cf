"""An agent's composition through the agents API (SPEC §4, §8): its shape, the pure
renderer's sections, and that reading it writes nothing.
"""

from __future__ import annotations

import pytest

from lens.core.config import AgentConfig
from lens.core.render import render_sections
from lens.core.token_counts import count_tokens
from lens.models import Agent
from tests.api_calls import ApiClient, context_text, db_snapshot, normalised
from tests.samples import SAMPLE_CONFIG

pytestmark = pytest.mark.django_db


# --- composition -------------------------------------------------------------------


def test_composition_has_the_contract_shape(api: ApiClient, agent: Agent) -> None:
    response = api.get("/api/agents/wren/composition")
    assert response.status_code == 200
    body = response.json()
    contract = {"agent", "spec", "background", "prompt", "report", "counts", "tokens"}
    # ``context`` is added beside the contract's keys (the agent declares no model).
    assert set(body) == contract | {"context"}
    assert body["context"] == {"model": None, "window": None, "share": None, "level": None}
    assert body["agent"] == "wren"
    assert body["spec"] is None
    assert body["background"] == normalised(SAMPLE_CONFIG)["background"]
    assert set(body["prompt"]) == {"sections"}
    for section in body["prompt"]["sections"]:
        assert set(section) == {"name", "source", "fragments", "tokens"}
        text = "".join(fragment["text"] for fragment in section["fragments"])
        assert section["tokens"] == count_tokens(text) > 0
        assert section["source"] in {"role", "instance"}
        assert section["fragments"]
        for fragment in section["fragments"]:
            assert set(fragment) <= {"source", "text", "memory_ids"}
            assert fragment["source"] == "authored"  # no memories exist yet
            assert isinstance(fragment["text"], str)
            assert fragment["text"] != ""
            assert fragment.get("memory_ids", []) == []
    assert body["report"]["drops"] == []
    assert isinstance(body["report"]["stats"], dict)
    assert body["counts"]["sections"] == 2
    assert body["counts"]["entries"] == 4
    prompt = "\n\n".join(
        "".join(f["text"] for f in section["fragments"]) for section in body["prompt"]["sections"]
    )
    assert body["tokens"] == {"encoding": "o200k_base", "total": count_tokens(prompt)}


def test_composition_sections_match_the_pure_renderer(api: ApiClient, agent: Agent) -> None:
    body = api.get("/api/agents/wren/composition").json()
    expected = render_sections(AgentConfig.model_validate(SAMPLE_CONFIG))

    got = body["prompt"]["sections"]
    assert [(s["name"], s["source"]) for s in got] == [(s.name, s.source) for s in expected]
    assert [(s["name"], s["source"]) for s in got] == [
        ("Persona", "role"),
        ("Mission", "role"),
        ("Capabilities", "role"),
        ("Manual", "role"),
        ("Context", "instance"),
    ]
    texts = ["".join(f["text"] for f in s["fragments"]) for s in got]
    assert texts == [s.text for s in expected]
    assert "\n\n".join(texts) == "\n\n".join(s.text for s in expected)


def test_composition_renders_the_background_as_the_spec_says(api: ApiClient, agent: Agent) -> None:
    text = context_text(api.get("/api/agents/wren/composition").json())
    assert text.startswith("## Context\n")
    assert (
        "### Ground Rules\n"
        "- **privacy**: Never share what the user says.\n"
        "- **check_in_hour**: 9\n"
        "- **ratio**: 2.5\n"
        "- **proactive**: true\n"
    ) in text
    # A section without entries renders nothing, not even its heading.
    assert "About the User" not in text
    assert "### Available Information Sources" in text
    assert text.index("### Ground Rules") < text.index("### Available Information Sources")
    assert "### Recalled Memories" not in text
    assert [line for line in text.splitlines() if line.startswith("## ")] == ["## Context"]


def test_composition_records_nothing(api: ApiClient, agent: Agent) -> None:
    before = db_snapshot()
    first = api.get("/api/agents/wren/composition")
    second = api.get("/api/agents/wren/composition")
    assert first.status_code == second.status_code == 200
    assert first.json() == second.json()
    assert db_snapshot() == before


def test_composition_of_an_agent_without_background_omits_the_context(api: ApiClient) -> None:
    api.put("/api/agents/bare", {"name": "Bare", "persona": "Just a persona."})
    body = api.get("/api/agents/bare/composition").json()
    assert [s["name"] for s in body["prompt"]["sections"]] == ["Persona"]
    assert body["counts"]["sections"] == 0
    assert body["counts"]["entries"] == 0
