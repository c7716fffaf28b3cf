"""``GET /api/agents/{slug}/export`` (SPEC §15): the token's team's agent as a bundle,
streamed as a gzip file; another team's agent and a missing token get the envelope.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest
from django.contrib.auth.models import User

from lens.agents import get_agent
from lens.models import Team
from memory.bundles.importing import import_bundle
from tests.api_calls import ApiClient, assert_error
from tests.factories import Unchanged, agent_state, bundle_story

pytestmark = pytest.mark.django_db


@pytest.fixture
def story(team: Team, api: ApiClient, reviewer: User) -> dict[str, str]:
    return bundle_story(team, api, reviewer)


def download(api: ApiClient, slug: str = "wren") -> bytes:
    response = api.get(f"/api/agents/{slug}/export")
    assert response.status_code == 200, response.content
    assert response.streaming
    assert response["Content-Type"] == "application/gzip"
    assert response["Content-Disposition"] == f'attachment; filename="{slug}.bundle.jsonl.gz"'
    data = b"".join(response.streaming_content)
    assert int(response["Content-Length"]) == len(data)
    assert "Content-Encoding" not in response  # the file is gzip; the transfer is not
    return data


def test_a_member_token_downloads_the_agents_bundle(api: ApiClient, story: dict[str, str]) -> None:
    text = gzip.decompress(download(api))
    head, _, rest = text.partition(b"\n")
    manifest = json.loads(head)
    assert (manifest["format"], manifest["version"], manifest["agent"]) == (
        "composition-lens-bundle",
        1,
        "wren",
    )
    assert manifest["sha256"] == hashlib.sha256(rest).hexdigest()
    lines = [json.loads(line) for line in rest.splitlines()]
    memories = {line["id"] for line in lines if line["type"] == "memory"}
    assert memories == set(story.values())
    assert manifest["counts"]["delivery"] == 4


def test_the_downloaded_bundle_imports_into_another_team(
    api: ApiClient, story: dict[str, str], team: Team, other_team: Team, tmp_path: Path
) -> None:
    wren = get_agent(team, "wren")
    before = agent_state(wren)
    path = tmp_path / "wren.bundle.jsonl.gz"
    path.write_bytes(download(api))
    wren.delete()
    after = agent_state(import_bundle(path, other_team).agent)
    # mira decided there and is no member here: her decisions keep her name only.
    assert {k: v for k, v in after.items() if k not in {"promotions", "events"}} == {
        k: v for k, v in before.items() if k not in {"promotions", "events"}
    }


def test_an_export_records_nothing(api: ApiClient, story: dict[str, str]) -> None:
    unchanged = Unchanged()
    download(api)
    unchanged.check()


def test_another_teams_agent_is_not_found(
    other_api: ApiClient, api: ApiClient, story: dict[str, str]
) -> None:
    error = assert_error(other_api.get("/api/agents/wren/export"), 404, "agent_not_found")
    missing = assert_error(api.get("/api/agents/ghost/export"), 404, "agent_not_found")
    assert error["message"] == missing["message"].replace("ghost", "wren")


def test_without_a_token_the_export_is_refused(anon_api: ApiClient, story: dict[str, str]) -> None:
    assert_error(anon_api.get("/api/agents/wren/export"), 401, "unauthorized")


def test_the_openapi_document_lists_the_export_as_a_gzip_file(anon_api: ApiClient) -> None:
    paths = anon_api.get("/api/openapi.json").json()["paths"]
    answer = paths["/api/agents/{slug}/export"]["get"]["responses"]["200"]
    assert "application/gzip" in answer["content"]
