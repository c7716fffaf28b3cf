"""A stored row that no longer parses costs one record, not a listing (SPEC §6.3): every
reader skips it and counts it — the prompt, recall, search and listings — and the lens,
the memories page and ``doctor`` say so."""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from lens.models import Agent
from memory.composition import compose
from memory.models import MemoryRecord
from memory.recall import recall
from tests.api_calls import ApiClient
from tests.factories import remember
from tests.pages import dom

pytestmark = pytest.mark.django_db

CORRUPTIONS: list[dict[str, Any]] = [
    {"kind": "NOT A KIND"},
    {"content": ""},
    {"tags": ["x" * 100]},
    {"tags": "not a list"},
    {"label": "two\nlines"},
]


def corrupt(record_id: str, change: dict[str, Any]) -> None:
    MemoryRecord.objects.filter(pk=record_id).update(**change)


@pytest.mark.parametrize("change", CORRUPTIONS)
def test_the_prompt_skips_an_unreadable_memory_and_counts_it(
    wren: Agent, change: dict[str, Any]
) -> None:
    good = remember(wren, "profile", "Name is Doug.", label="name")
    bad = remember(wren, "profile", "Lives in Lisbon.", label="city")
    corrupt(bad, change)
    composition = compose(wren)
    in_prompt = {m for section in composition.prompt.sections for m in section.memory_ids}
    assert in_prompt == {good}
    assert bad not in {drop.memory_id for drop in composition.report.drops}
    assert composition.report.stats.unreadable == 1


def test_the_api_and_the_lens_say_how_many_were_skipped(
    api: ApiClient, member_client: Client, wren: Agent
) -> None:
    bad = remember(wren, "profile", "Lives in Lisbon.", label="city")
    corrupt(bad, {"kind": "NOT A KIND"})
    assert api.get("/api/agents/wren/composition").json()["report"]["stats"]["unreadable"] == 1
    page = dom(member_client.get("/agents/wren/"))
    assert page.one("data-unreadable").get("data-unreadable") == "1"


def test_a_healthy_lens_has_no_warning(member_client: Client, wren: Agent) -> None:
    remember(wren, "profile", "Lives in Lisbon.", label="city")
    assert dom(member_client.get("/agents/wren/")).all("data-unreadable") == []


@pytest.mark.parametrize("change", CORRUPTIONS)
def test_recall_skips_an_unreadable_memory(wren: Agent, change: dict[str, Any]) -> None:
    good = remember(wren, "episode", "Had tea with Anna.")
    bad = remember(wren, "episode", "Had tea with Bob.")
    corrupt(bad, change)
    assert recall(wren, "tea").memory_ids == (good,)


def test_search_through_the_api_skips_and_counts(api: ApiClient, wren: Agent) -> None:
    good = remember(wren, "episode", "Had tea with Anna.")
    bad = remember(wren, "episode", "Had tea with Bob.")
    corrupt(bad, {"kind": "NOT A KIND"})
    answer = api.get("/api/agents/wren/memories?q=tea").json()
    assert [m["id"] for m in answer["memories"]] == [good]
    assert answer["skipped"] == 1


def test_the_memories_page_marks_the_row_and_warns(member_client: Client, wren: Agent) -> None:
    remember(wren, "episode", "Had tea with Anna.")
    bad = remember(wren, "episode", "Had tea with Bob.")
    corrupt(bad, {"tags": ["x" * 100]})
    page = dom(member_client.get("/memories/"))
    assert [e.get("data-memory-id") for e in page.all("data-unreadable", tag="tr")] == [bad]
    assert page.one("data-unreadable", "1").tag == "p"


def test_doctor_names_unreadable_memories_and_fails(wren: Agent) -> None:
    bad = remember(wren, "episode", "Had tea with Bob.")
    out = StringIO()
    call_command("doctor", stdout=out, stderr=StringIO())
    assert "memory records: ok" in out.getvalue()
    corrupt(bad, {"label": "two\nlines"})
    err = StringIO()
    with pytest.raises(CommandError):
        call_command("doctor", stdout=StringIO(), stderr=err)
    assert bad in err.getvalue()
