"""``GET /api/agents/{slug}/export``: an agent as a portable bundle (SPEC §15)."""

from __future__ import annotations

from django.http import StreamingHttpResponse
from django.utils.http import content_disposition_header
from ninja import Router

from lens.agents import get_agent
from memory.bundles.exporting import export_bundle
from web.api.auth import ApiRequest, team_of
from web.costly import costly

router = Router(tags=["bundles"])

_BUNDLE = {
    "description": "The agent's bundle: gzip-compressed JSON Lines (docs/bundles.md).",
    "content": {"application/gzip": {"schema": {"type": "string", "format": "binary"}}},
}


@router.get("/{slug}/export", openapi_extra={"responses": {200: _BUNDLE}})
@costly
def export_agent(request: ApiRequest, slug: str) -> StreamingHttpResponse:
    """The token's team's agent ``slug`` as one bundle file, streamed. The database is
    read before the first byte is sent (one snapshot); the bundle then comes from a
    temporary file, so a slow download holds nothing but that file."""
    agent = get_agent(team_of(request), slug)
    exported = export_bundle(agent)
    response = StreamingHttpResponse(exported.chunks(), content_type="application/gzip")
    response["Content-Length"] = str(exported.size)
    # Slugs are [a-z0-9-]: a plain ASCII name, nothing to escape.
    response["Content-Disposition"] = content_disposition_header(
        True, f"{agent.slug}.bundle.jsonl.gz"
    )
    return response
