"""After an erasure, no API answer, MCP tool, page, download (a bundle export among them)
or stored row holds the erased memories' words (SPEC §15). Memories that went
everywhere first — composed, delivered several times, searched, recalled, superseded,
waiting in the queue, rejected with a note quoting them — are erased, then every place
is swept for their words.

The same sweep run before the erasure finds the words in each kind of place, so it is
known to look where they were.
"""

from __future__ import annotations

import gzip
import json
import zlib
from typing import Any
from urllib.parse import urlencode

import pytest
from django.contrib.auth.models import User
from django.test import Client

from lens.actors import Actor
from lens.audit import verify_all
from lens.models import ApiToken, Team
from memory.decisions import decide
from memory.erasure import erase_memory
from memory.models import Delivery, MemoryRecord, StoredComposition
from tests.api_calls import ApiClient, db_snapshot
from tests.factories import create_agent, logged_in, make_user, memory_config
from web.mcp import operations

pytestmark = pytest.mark.django_db

LABEL = "Thistlewood"
CONTENT = "Quixotica Fennimore lives by the Thistlewood canal, flat 9"
TAG = "glimmerquill"
PENDING = "Prefers Vexillarium tea served in Ozymandine cups"
NOTE_QUOTE = "Vexillarium is a typo"
WORDS = ("Quixotica", "Fennimore", "Thistlewood", TAG, "Vexillarium", "Ozymandine")
# What searches and recall ask for: words the erased memories held besides the distinctive
# ones, so that no answer holds a distinctive word merely by echoing the question.
ASKED = ("canal", "flat", "kept", "tea", "cups", "twice")


def found_in(text: str) -> list[str]:
    folded = text.casefold()
    return [word for word in WORDS if word.casefold() in folded]


class Sweep:
    """Every place an erased memory's words could show, read as the product serves it."""

    def __init__(self, api: ApiClient, page: Client, admin: Client, token: ApiToken) -> None:
        self.api, self.page, self.admin, self.token = api, page, admin, token
        self.seen: dict[str, list[str]] = {}

    def look(self, where: str, text: str) -> None:
        if words := found_in(text):
            self.seen[where] = words

    def api_get(self, path: str, **query: str) -> Any:
        url = f"{path}?{urlencode(query)}" if query else path
        response = self.api.get(url)
        assert response.status_code == 200, (url, response.content)
        self.look(f"API {url}", response.content.decode())
        return response.json()

    def export_get(self, path: str) -> None:
        """A bundle download: read whole, decompressed, every line."""
        response = self.api.get(path)
        assert response.status_code == 200, (path, response.status_code)
        assert response["Content-Type"] == "application/gzip"
        data = b"".join(response.streaming_content) if response.streaming else response.content
        self.look(f"API {path}", gzip.decompress(data).decode())

    def page_get(self, path: str, client: Client | None = None, **query: str) -> None:
        response = (client or self.page).get(path, query)
        assert response.status_code == 200, (path, response.status_code)
        self.look(f"page {path}?{urlencode(query)}", response.content.decode())

    def run(self, record_ids: list[str]) -> dict[str, list[str]]:
        self.seen = {}
        deliveries = list(Delivery.objects.order_by("delivered_at"))
        # The JSON API.
        self.api_get("/api/agents/wren/memories")
        for word in ASKED:
            self.api_get("/api/agents/wren/memories", q=word)
            self.api_get("/api/agents/wren/recall", message=f"What about {word}?")
        self.api_get("/api/agents/wren/composition")
        self.api_get("/api/agents/wren/deliveries")
        for record_id in record_ids:
            self.api_get("/api/agents/wren/deliveries", memory=record_id)
        first = deliveries[0].id
        for delivery in deliveries:
            self.api_get(f"/api/deliveries/{delivery.id}")
            self.api_get(f"/api/deliveries/{delivery.id}/diff")
            self.api_get(f"/api/deliveries/{delivery.id}/diff", against=first)
            self.api_get("/api/agents/wren/composition", as_of=delivery.delivered_at.isoformat())
        self.api_get("/api/audit", limit="200")
        self.api_get("/api/agents/wren")
        self.export_get("/api/agents/wren/export")
        preview = self.api.post(
            "/api/agents/wren/memories/preview",
            {"kind": "profile", "content": "x", "label": "home"},
        )
        self.look("API preview", preview.content.decode())
        delivered = self.api.post("/api/agents/wren/deliveries", {"session": "sweep"})
        assert delivered.status_code == 201
        self.look("API new delivery", delivered.content.decode())
        # The MCP tools (what they answer is what the tool's text holds).
        for word in ASKED:
            found = operations.memory_search(
                self.token, agent="wren", query=word, kind=None, limit=None
            )
            self.look(f"MCP memory_search {word}", found.model_dump_json())
            recalled = operations.memory_recall(self.token, agent="wren", message=word)
            self.look(f"MCP memory_recall {word}", recalled.model_dump_json())
        # The pages.
        for path in ("/", "/agents/wren/", "/memories/", "/approvals/", "/agents/wren/deliveries/"):
            self.page_get(path)
        for word in ASKED:
            self.page_get("/memories/", q=word)
        for record_id in record_ids:
            self.page_get(f"/memories/{record_id}/")
            self.page_get("/agents/wren/deliveries/", memory=record_id)
        for record in MemoryRecord.objects.filter(supersedes_id__in=record_ids):
            self.page_get(f"/memories/{record.pk}/")
        for delivery in deliveries:
            self.page_get(f"/deliveries/{delivery.id}/")
            self.page_get(f"/deliveries/{delivery.id}/diff/")
            self.page_get(f"/deliveries/{delivery.id}/diff/", against=first)
            self.page_get(f"/deliveries/{delivery.id}/live/")
            self.page_get(f"/deliveries/{delivery.id}/prompt.txt")
            self.page_get(f"/deliveries/{delivery.id}/diff/download/")
            self.page_get("/agents/wren/", as_of=delivery.delivered_at.isoformat())
        self.page_get("/admin/memory/memoryrecord/", self.admin)
        for record_id in record_ids:
            self.page_get(f"/admin/memory/memoryrecord/{record_id}/change/", self.admin)
        self.page_get("/admin/memory/promotion/", self.admin)
        # Every stored row, and every stored composition inflated.
        for table, rows in db_snapshot().items():
            self.look(f"table {table}", json.dumps(rows, default=str, ensure_ascii=False))
        for pk, body in StoredComposition.objects.values_list("pk", "body"):
            self.look(f"composition {pk}", zlib.decompress(bytes(body)).decode())
        return self.seen


@pytest.fixture
def sweep(team: Team, reviewer: User, api: ApiClient) -> Sweep:
    admin = logged_in(make_user("root", team, is_staff=True, is_superuser=True))
    return Sweep(api, logged_in(reviewer), admin, ApiToken.objects.get(team=team))


def test_nothing_anywhere_holds_an_erased_memorys_words(
    team: Team, reviewer: User, api: ApiClient, sweep: Sweep
) -> None:
    create_agent(team, "wren", memory_config(recall_pinned_candidates=True))
    saved = api.post(
        "/api/agents/wren/memories",
        {"kind": "profile", "content": CONTENT, "label": LABEL, "tags": [TAG, "kept"]},
    )
    composed = saved.json()["id"]
    pending = api.post(
        "/api/agents/wren/memories", {"kind": "preference", "content": PENDING, "label": "tea"}
    ).json()["id"]
    rejected = api.post(
        "/api/agents/wren/memories",
        {"kind": "preference", "content": f"{PENDING}, twice", "label": "cups"},
    ).json()["id"]
    decide(rejected, False, Actor.for_user(reviewer), NOTE_QUOTE)
    for session in ("s1", "s2", "s3"):
        assert api.post("/api/agents/wren/deliveries", {"session": session}).status_code == 201
    newer = api.post(
        "/api/agents/wren/memories",
        {"kind": "profile", "content": "Moved away", "label": "home", "supersedes": composed},
    )
    assert newer.status_code == 201
    assert api.post("/api/agents/wren/deliveries", {"session": "s4"}).status_code == 201
    erased = [composed, pending, rejected]

    before = sweep.run(erased)
    kinds = {where.split(" ")[0] for where in before}
    assert {"API", "MCP", "page", "table", "composition"} <= kinds, before
    assert "API /api/agents/wren/memories?q=canal" in before
    assert "page /memories/?q=cups" in before
    assert "API /api/agents/wren/export" in before
    assert any(where.startswith("page /deliveries/") for where in before)

    for record_id in erased:
        erase_memory(record_id, Actor.for_user(reviewer), "Request from the user", team=team)

    after = sweep.run(erased)
    assert after == {}
    assert all(found.first_bad is None for found in verify_all(None))
    # The deliveries still say which memories shaped them, and that they were redacted.
    listing = api.get(f"/api/agents/wren/deliveries?memory={composed}").json()
    assert [row["session"] for row in listing["deliveries"]] == ["s3", "s2", "s1"]
    assert all(row["redacted"] is True for row in listing["deliveries"])
