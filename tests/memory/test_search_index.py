"""The search index on the application's database: written with each record, rebuilt by
``reindex_memories``, checked by ``doctor``, and searched through the API.
"""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from lens.actors import Actor
from lens.models import Agent, Team
from memory import search
from memory.core.records import MemoryInput
from memory.models import MemoryRecord, SearchDoc
from memory.saving import Saved, save_memory
from tests.api_calls import ApiClient, assert_error
from tests.factories import create_agent

pytestmark = pytest.mark.django_db


def remember(agent: Agent, content: str, **extra: Any) -> str:
    saved = save_memory(agent, MemoryInput(kind="fact", content=content, **extra), Actor("t"))
    assert isinstance(saved, Saved)
    return saved.id


def found(agent: Agent, query: str) -> list[str]:
    return search.search([agent.pk], query, None, 50, 0)


def test_a_saved_memory_is_searchable_at_once(agent: Agent) -> None:
    record_id = remember(agent, "Drinks oolong.", label="Tea", tags=["Morning"])
    doc = SearchDoc.objects.get(record_id=record_id)
    assert doc.terms == "drinks oolong tea morning"
    assert (doc.agent_id, doc.kind) == (agent.pk, "fact")
    assert found(agent, "OOLONG") == found(agent, "morning") == [record_id]


def test_a_failure_while_indexing_saves_nothing(agent: Agent, monkeypatch: Any) -> None:
    # One transaction: a record is never stored without its search document.
    def refuse(record: MemoryRecord) -> SearchDoc:
        raise OSError("the disk is full")

    monkeypatch.setattr(search, "document", refuse)
    with pytest.raises(OSError, match="disk"):
        save_memory(agent, MemoryInput(kind="fact", content="x"), Actor("t"))
    assert (MemoryRecord.objects.count(), SearchDoc.objects.count()) == (0, 0)


def test_deleting_an_agent_takes_its_search_documents_along(team: Team, agent: Agent) -> None:
    remember(agent, "Drinks oolong.")
    agent.delete()
    assert SearchDoc.objects.count() == 0
    other = create_agent(team, "other")
    remember(other, "Drinks oolong too.")
    assert len(found(other, "oolong")) == 1  # nothing stale is left in the index


def run(name: str) -> str:
    out = StringIO()
    call_command(name, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_reindex_rebuilds_a_lost_index_and_doctor_notices_the_loss(agent: Agent) -> None:
    ids = {remember(agent, f"Tea note {n}.") for n in range(3)}
    assert "search index: ok (3 of 3 memories)" in run("doctor")
    SearchDoc.objects.all().delete()
    assert found(agent, "tea") == []
    with pytest.raises(CommandError):
        run("doctor")
    assert "Indexed 3 memories for search." in run("reindex_memories")
    assert set(found(agent, "tea")) == ids
    assert "search index: ok (3 of 3 memories)" in run("doctor")


def test_the_api_searches_with_kind_and_paging(api: ApiClient, agent: Agent) -> None:
    tea = [remember(agent, f"Tea note {n}.") for n in range(3)]
    save_memory(agent, MemoryInput(kind="preference", content="Tea, green."), Actor("t"))
    page = api.get("/api/agents/wren/memories?q=tea&kind=fact&limit=2").json()
    assert len(page["memories"]) == 2
    assert page["next_offset"] == 2
    rest = api.get("/api/agents/wren/memories?q=tea&kind=fact&limit=2&offset=2").json()
    assert {m["id"] for m in page["memories"] + rest["memories"]} == set(tea)
    assert rest["next_offset"] is None


@pytest.mark.parametrize(
    ("query", "why"),
    [
        ("x" * 4001, "at most 4000 characters"),
        ("+".join(f"w{n}" for n in range(65)), "at most 64 different words"),
    ],
)
def test_the_api_refuses_a_query_it_will_not_run(
    api: ApiClient, agent: Agent, query: str, why: str
) -> None:
    error = assert_error(api.get(f"/api/agents/wren/memories?q={query}"), 422, "invalid_query")
    assert why in error["message"]


def test_search_is_team_scoped(api: ApiClient, other_api: ApiClient, agent: Agent) -> None:
    remember(agent, "Secret tea.")
    assert_error(other_api.get("/api/agents/wren/memories?q=tea"), 404, "agent_not_found")
