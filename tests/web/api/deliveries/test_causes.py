"""Why the prompt changed between two deliveries (SPEC §14 "Attribution"): the delivery
diff lists every revision and every memory event between them that can change a prompt,
oldest first, each with who and when.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.utils import timezone

from lens.actors import Actor
from lens.models import Agent, Revision
from memory.decisions import decide, revoke
from memory.deliveries.causes import CAUSES_MAX
from memory.models import Delivery
from tests.api_calls import ApiClient
from tests.factories import preference, remember
from tests.samples import SAMPLE_CONFIG

pytestmark = pytest.mark.django_db

REVIEWER = Actor(label="alice")


def deliver(api: ApiClient) -> str:
    response = api.post("/api/agents/wren/deliveries", {})
    assert response.status_code == 201, response.content
    return str(response.json()["delivery_id"])


def causes(api: ApiClient, delivery_id: str, against: str | None = None) -> dict[str, Any]:
    query = "" if against is None else f"?against={against}"
    body = api.get(f"/api/deliveries/{delivery_id}/diff{query}").json()
    return {"items": body["causes"], "total": body["causes_total"]}


def test_the_causes_between_two_deliveries_oldest_first(
    api: ApiClient, wren: Agent, token_prefix: str
) -> None:
    first = deliver(api)
    saved = remember(wren, "profile", "Doug", label="name")  # approved at once: a cause
    waiting = preference(wren, "Prefers tea.", label="drink")  # pending: not yet a cause
    config = api.get("/api/agents/wren").json()
    config["persona"] = "You are Wren, briefly."
    assert api.put("/api/agents/wren", config).status_code == 200
    decide(waiting, True, REVIEWER)
    revoke(saved, REVIEWER, "wrong name")
    second = deliver(api)

    found = causes(api, second)
    assert found["total"] == 4
    assert [(c["kind"], c.get("event"), c.get("memory_id")) for c in found["items"]] == [
        ("memory", "saved", saved),
        ("revision", None, None),
        ("memory", "approved", waiting),
        ("memory", "revoked", saved),
    ]
    revision = found["items"][1]
    assert revision["revision"] == Revision.objects.filter(agent=wren).count()
    assert revision["actor"] == f"token {token_prefix}…"
    assert revision["approved_by"] is None
    assert revision["summary"] == [{"change": "field_changed", "field": "persona"}]
    assert [c["actor"] for c in found["items"][2:]] == ["alice", "alice"]
    times = [c["at"] for c in found["items"]]
    assert times == sorted(times)
    # Nothing happened before the first delivery but the agent's creation.
    before = causes(api, first)["items"]
    assert [(c["kind"], c.get("revision")) for c in before] == [("revision", 1)]
    # Either order of the two deliveries gives the same causes.
    assert causes(api, first, against=second)["items"] == found["items"]


def test_no_cause_between_two_identical_deliveries(api: ApiClient, wren: Agent) -> None:
    deliver(api)
    preference(wren, "Prefers tea.", label="drink")  # waits for review: changes nothing
    assert causes(api, deliver(api)) == {"items": [], "total": 0}


def test_a_rejection_and_a_supersession_are_causes(api: ApiClient, wren: Agent) -> None:
    waiting = preference(wren, "Prefers tea.", label="drink")
    older = remember(wren, "profile", "Doug", label="name")
    first = deliver(api)
    decide(waiting, False, REVIEWER)
    newer = remember(wren, "profile", "Douglas", label="name", supersedes=older)
    events = [(c["event"], c["memory_id"]) for c in causes(api, deliver(api))["items"]]
    assert ("rejected", waiting) in events
    assert ("superseded", older) in events
    assert ("saved", newer) in events
    assert events.index(("rejected", waiting)) < events.index(("saved", newer))
    assert first


def test_causes_are_bounded_and_counted(api: ApiClient, wren: Agent) -> None:
    first = deliver(api)
    # Many revisions at once, written directly: the bound is what is tested here.
    newest = Revision.objects.get(agent=wren)
    Revision.objects.bulk_create(
        Revision(
            agent=wren,
            number=n,
            created_at=timezone.now(),
            actor="bulk",
            via="api",
            config_id=newest.config_id,
            summary=[],
        )
        for n in range(2, CAUSES_MAX + 7)
    )
    second = deliver(api)
    found = causes(api, second, against=first)
    assert found["total"] == CAUSES_MAX + 5
    assert len(found["items"]) == CAUSES_MAX
    assert [c["revision"] for c in found["items"][:2]] == [2, 3]


def test_a_delivery_older_than_revisions_takes_them_by_time(api: ApiClient, wren: Agent) -> None:
    first = deliver(api)
    Delivery.objects.filter(pk=first).update(revision=None)
    config: dict[str, Any] = json.loads(json.dumps(SAMPLE_CONFIG))
    config["persona"] = "Newer."
    api.put("/api/agents/wren", config)
    found = causes(api, deliver(api))
    assert [(c["kind"], c["revision"]) for c in found["items"]] == [("revision", 2)]


def test_saves_that_wait_for_review_do_not_hide_later_causes(
    api: ApiClient, wren: Agent, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("memory.deliveries.causes.CAUSES_MAX", 3)
    first = deliver(api)
    waiting = [preference(wren, f"Prefers tea number {n}.", label=f"drink{n}") for n in range(6)]
    decide(waiting[0], True, REVIEWER)
    decide(waiting[1], False, REVIEWER)
    found = causes(api, deliver(api), against=first)
    assert [(c["event"], c["memory_id"]) for c in found["items"]] == [
        ("approved", waiting[0]),
        ("rejected", waiting[1]),
    ]
    assert found["total"] == 2
