"""Calling the JSON API in tests: a bearer-token client, the error envelope, and
readers of the agents, memories and key/value answers.
"""

from __future__ import annotations

import json
import re
from typing import Any

from django.apps import apps
from django.conf import settings
from django.test import Client
from django.test.client import ClientHandler
from django.utils.module_loading import import_string

from kvstore.models import Key, Version
from lens.models import Agent
from memory.models import MemoryRecord


class _ServedHandler(ClientHandler):
    """The test client's handler with the production server's front ahead of Django
    (``settings.API_FRONT``, ``lens/serving/served.py``): what the front answers never
    reaches Django, as in production. ``answered``: the paths the front answered."""

    def __init__(self, enforce_csrf_checks: bool = True) -> None:
        super().__init__(enforce_csrf_checks)
        self.answered: list[str] = []
        # The test's transaction must outlive each request: no connection is closed.
        self.front = (
            import_string(settings.API_FRONT)(self, manage_connections=False)
            if settings.API_FRONT
            else None
        )

    def __call__(self, environ: dict[str, Any]) -> Any:
        answered = None if self.front is None else self.front.answer(environ)
        if answered is None:
            return super().__call__(environ)
        response, request = answered
        response.wsgi_request = request
        self.answered.append(request.get_full_path())
        return response


class ServedClient(Client):
    """Django's test client as the production server serves requests: the front first."""

    handler: _ServedHandler

    def __init__(self, **defaults: Any) -> None:
        super().__init__(**defaults)
        self.handler = _ServedHandler()


class ApiClient:
    """A JSON client that sends a bearer token, served as the production server serves
    (the key/value read's own route first)."""

    def __init__(self, token: str | None) -> None:
        self.client = ServedClient()
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}

    def _call(self, method: str, path: str, body: Any = None, raw: str | None = None) -> Any:
        data = raw if raw is not None else (json.dumps(body) if body is not None else None)
        kwargs: dict[str, Any] = {"headers": self.headers}
        if data is not None:
            kwargs.update(data=data, content_type="application/json")
        return getattr(self.client, method)(path, **kwargs)

    def get(self, path: str) -> Any:
        return self._call("get", path)

    def put(self, path: str, body: Any = None, raw: str | None = None) -> Any:
        return self._call("put", path, body, raw)

    def post(self, path: str, body: Any = None, raw: str | None = None) -> Any:
        return self._call("post", path, body, raw)

    def delete(self, path: str) -> Any:
        return self._call("delete", path)


# --- the JSON API ------------------------------------------------------------------

SNAKE_CASE = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*")


def assert_error(response: Any, status: int, code: str | None = None) -> dict[str, Any]:
    """The response is the error envelope ``{"error": {"code", "message", ...}}``."""
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"}
    error = body["error"]
    assert SNAKE_CASE.fullmatch(error["code"]), error
    assert isinstance(error["message"], str)
    assert error["message"].strip()
    if code is not None:
        assert error["code"] == code, error
    return dict(error)


def db_snapshot() -> dict[str, list[dict[str, Any]]]:
    """Every row of every table, so a test can prove that nothing at all was written."""
    return {
        model._meta.label: list(model._default_manager.order_by("pk").values())
        for model in apps.get_models()
    }


# --- the agents API ----------------------------------------------------------------


def without_revision(answer: dict[str, Any]) -> dict[str, Any]:
    """A config answer (GET or PUT) less its ``revision``, which must be a revision number."""
    config = dict(answer)
    revision = config.pop("revision")
    assert isinstance(revision, int), revision
    assert revision >= 1, revision
    return config


def normalised(config: dict[str, Any]) -> dict[str, Any]:
    """What the server stores for ``config``: every default filled in (SPEC §3.1, §8)."""
    return {
        "name": config["name"],
        "persona": config.get("persona", ""),
        "tone": config.get("tone", ""),
        "objective": config.get("objective", ""),
        "capabilities": [
            {"name": c["name"], "description": c.get("description", "")}
            for c in config.get("capabilities", [])
        ],
        "manual": config.get("manual", ""),
        "routing_spec": config.get("routing_spec"),
        "background": {
            "sections": [
                {
                    "id": s["id"],
                    "title": s["title"],
                    "promotion": s.get("promotion", "locked"),
                    "entries": [
                        {"key": e["key"], "value": e["value"], "memory_ids": []}
                        for e in s.get("entries", [])
                    ],
                }
                for s in config.get("background", {}).get("sections", [])
            ]
        },
        "awareness": [
            {
                "name": a["name"],
                "description": a.get("description", ""),
                "access_method": a.get("access_method", ""),
            }
            for a in config.get("awareness", [])
        ],
        "recall_pinned_candidates": config.get("recall_pinned_candidates", False),
        "protected": config.get("protected", False),
        # Left out when unset (lens.core.config): as GET answers it.
        **({"model": config["model"]} if config.get("model") is not None else {}),
    }


def context_text(composition: dict[str, Any]) -> str:
    """The text of the Context section of a composition as the API answers it."""
    (context,) = [s for s in composition["prompt"]["sections"] if s["name"] == "Context"]
    return "".join(fragment["text"] for fragment in context["fragments"])


# --- the memories API --------------------------------------------------------------

DOUG = "The user's name is Doug."
VIEW_KEYS = {
    "id",
    "kind",
    "content",
    "tags",
    "label",
    "supersedes",
    "created_at",
    "valid_until",
}


def memory_body(kind: str = "profile", content: str = DOUG, **extra: Any) -> dict[str, Any]:
    return {"kind": kind, "content": content, **extra}


def post_memory(client: ApiClient, body: dict[str, Any], slug: str = "wren") -> str:
    """Save a memory that must be accepted; return its id."""
    response = client.post(f"/api/agents/{slug}/memories", body)
    assert response.status_code == 201, response.content
    answer = response.json()
    assert answer == {"status": "saved", "id": answer["id"]}
    assert re.fullmatch(r"[0-9a-z]+", answer["id"])
    return str(answer["id"])


def memories_listing(client: ApiClient, query: str = "", slug: str = "wren") -> dict[str, Any]:
    response = client.get(f"/api/agents/{slug}/memories{query}")
    assert response.status_code == 200, response.content
    return dict(response.json())


def api_composition(client: ApiClient, slug: str = "wren") -> dict[str, Any]:
    """The composition endpoint's answer less its ``context`` (the prompt against its
    model's window, which only that endpoint adds): the composition a delivery records."""
    response = client.get(f"/api/agents/{slug}/composition")
    assert response.status_code == 200, response.content
    answer = dict(response.json())
    assert set(answer.pop("context")) == {"model", "window", "share", "level"}
    return answer


def api_fragments(composed: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for section in composed["prompt"]["sections"] for f in section["fragments"]]


def api_memory_fragments(composed: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in api_fragments(composed) if f["source"] == "memory"]


def api_composed_ids(composed: dict[str, Any]) -> list[str]:
    return [mid for f in api_fragments(composed) for mid in f.get("memory_ids") or []]


def api_drops(composed: dict[str, Any]) -> dict[str, str]:
    return {drop["memory_id"]: drop["reason"] for drop in composed["report"]["drops"]}


def api_prompt_text(composed: dict[str, Any]) -> str:
    return "\n\n".join(
        "".join(f["text"] for f in section["fragments"])
        for section in composed["prompt"]["sections"]
    )


def api_section_entries(composed: dict[str, Any], section_id: str) -> list[dict[str, Any]]:
    (section,) = [s for s in composed["background"]["sections"] if s["id"] == section_id]
    return list(section["entries"])


def assert_every_memory_accounted_for(composed: dict[str, Any], agent: Agent) -> None:
    """SPEC §5.6: each memory is in some fragment's memory_ids or in the drops, once."""
    ids = set(MemoryRecord.objects.filter(agent=agent).values_list("id", flat=True))
    in_prompt = api_composed_ids(composed)
    dropped = [drop["memory_id"] for drop in composed["report"]["drops"]]
    assert len(dropped) == len(set(dropped))
    assert set(in_prompt).isdisjoint(dropped)
    assert set(in_prompt) | set(dropped) == ids


# --- the key/value API -------------------------------------------------------------

KV_KEY_OUT = {"id", "version", "written_at", "runes"}
KV_PAGE = {"limit", "offset", "next_offset"}


def kv_url(key: str, suffix: str = "") -> str:
    """The key's URL; ``key`` is put in the path as given (already escaped if need be)."""
    return f"/api/kv/{key}{suffix}"


def kv_put(api: ApiClient, key: str, payload: Any, **extra: Any) -> Any:
    return api.put(kv_url(key), {"payload": payload, **extra})


def kv_write_versions(api: ApiClient, key: str, *payloads: str) -> list[int]:
    versions = []
    for payload in payloads:
        response = kv_put(api, key, payload)
        assert response.status_code in (200, 201), response.content
        versions.append(response.json()["version"])
    return versions


def kv_listing(api: ApiClient, query: str = "") -> dict[str, Any]:
    response = api.get(f"/api/kv?{query}")
    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) == {"keys", "total"} | KV_PAGE
    for item in body["keys"]:
        assert set(item) == KV_KEY_OUT
    return dict(body)


def kv_store_rows() -> list[tuple[Any, ...]]:
    """Every key and version row, so a test can prove a refusal wrote nothing."""
    keys = list(
        Key.objects.order_by("pk").values_list(
            "team_id", "key", "latest_version", "latest_written_at", "latest_runes"
        )
    )
    versions = list(
        Version.objects.order_by("pk").values_list(
            "key_id", "version", "payload", "runes", "first_line", "written_at"
        )
    )
    return [*keys, *versions]
