"""The JSON HTTP API: one NinjaAPI, bearer-authenticated, with the error envelope, and
every resource's router mounted under it."""

from __future__ import annotations

from ninja import NinjaAPI

from web.api import error_envelope
from web.api.agent_routes import agents
from web.api.audit_routes import router as audit_router
from web.api.auth import TeamToken
from web.api.bundle_routes import router as bundle_router
from web.api.delivery_routes import agent_deliveries
from web.api.delivery_routes import deliveries as deliveries_router
from web.api.kv_routes import bootstrap_router
from web.api.kv_routes import router as kv_router
from web.api.memory_routes import router as memory_router
from web.api.migration_routes import router as migration_router
from web.api.parser import JsonParser
from web.api.proposal_routes import agent_proposals
from web.api.proposal_routes import proposals as proposals_router
from web.api.rendering import ApiRenderer
from web.api.revision_routes import router as revision_router
from web.api.routing_case_routes import router as routing_case_router
from web.api.stability_routes import router as stability_router
from web.api.webhook_routes import router as webhook_router
from web.api.what_if_routes import router as what_if_router

api = NinjaAPI(
    title="Composition Lens API",
    version="1",
    description="Agents, their composed prompts, memories and the versioned key/value store.",
    auth=TeamToken(),
    parser=JsonParser(),
    renderer=ApiRenderer(),
    docs_url="/docs",
    openapi_url="/openapi.json",
)
error_envelope.install(api)


# The key/value routes first: agents read keys every session, and URL resolution tries
# the patterns in order (no two of these prefixes overlap).
api.add_router("/kv", kv_router)
api.add_router("/bootstrap", bootstrap_router)
api.add_router("/agents", agents)
api.add_router("/agents", memory_router)
api.add_router("/agents", agent_deliveries)
api.add_router("/agents", revision_router)
api.add_router("/agents", agent_proposals)
api.add_router("/agents", bundle_router)
api.add_router("/agents", stability_router)
api.add_router("/agents", routing_case_router)
api.add_router("/agents", migration_router)
api.add_router("/agents", what_if_router)
api.add_router("/proposals", proposals_router)
api.add_router("/deliveries", deliveries_router)
api.add_router("/audit", audit_router)
api.add_router("/webhooks", webhook_router)
