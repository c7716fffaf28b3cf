"""How an error answers over HTTP: the status of every domain error code, and the
error that carries it to the §8 envelope. The middleware answers with it before any view
runs; the API (``web/api/error_envelope.py``) for everything its views raise.
"""

from __future__ import annotations

from typing import Any

from lens.core.errors import DomainError


class ApiError(Exception):
    """Raise anywhere under the API to answer with the error envelope."""

    def __init__(self, status: int, code: str, message: str, **details: Any) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = details


# Every domain error code and the HTTP status it answers with: the one place where
# meaning becomes HTTP (tests/lens/serving/test_domain_errors.py checks that no code is missing).
STATUS_BY_CODE: dict[str, int] = {
    "agent_not_found": 404,
    "key_not_found": 404,
    "version_not_found": 404,
    "delivery_not_found": 404,
    "promotion_not_found": 404,
    "revision_not_found": 404,
    "proposal_not_found": 404,
    # Erasure is a command and a page action today (SPEC §15); the statuses keep any
    # later API caller honest.
    "memory_not_found": 404,
    "memory_erased": 409,
    "already_erased": 409,
    "invalid_erase_reason": 422,
    "invalid_request": 422,
    "invalid_background": 422,
    "invalid_kind": 422,
    "invalid_content": 422,
    "invalid_tags": 422,
    "invalid_label": 422,
    "invalid_supersedes": 422,
    "invalid_valid_until": 422,
    "invalid_slug": 422,
    "invalid_key": 422,
    "unknown_routing_spec": 422,
    "unknown_supersedes": 422,
    "invalid_query": 422,
    "invalid_message": 422,
    "payload_too_large": 413,
    "version_conflict": 409,
    "revision_conflict": 409,
    "not_pending": 409,
    "proposal_decided": 409,
    # Undo is a page action today; the statuses keep any later API caller honest.
    "undo_refused": 409,
    "undo_not_yours": 403,
    # Four eyes: pages answer these today, and a later API caller keeps them.
    "own_proposal": 403,
    "token_decides": 403,
    # Issuing and revoking a person's tokens: pages and commands answer these today.
    "invalid_token_name": 422,
    "not_a_member": 403,
    "too_many_tokens": 409,
    "token_not_found": 404,
    "not_proposer": 403,
    "undo_expired": 409,
    "undo_changed": 409,
    "address_taken": 409,
    # A decision asked about (what-if, SPEC §18.2) that the memory's state refuses.
    "not_approved": 409,
    "not_reopenable": 409,
    "deliveries_busy": 503,
    "webhook_not_found": 404,
    "webhook_message_not_found": 404,
    "webhook_url_refused": 422,
    "too_many_webhooks": 409,
    # An MCP call over stdio whose token was revoked (web/mcp/calls.py): the API's
    # own 401 code, should it ever be raised where a status is needed.
    "unauthorized": 401,
    # Bundles (SPEC §15): a file that does not read, and one this instance cannot take.
    "invalid_bundle": 422,
    "bundle_conflict": 409,
    # Routing cases (SPEC §18.1): more than an agent holds, two with one name.
    "too_many_routing_cases": 422,
    "duplicate_case_name": 422,
    # Migrating placements (SPEC §18.3).
    "plan_changed": 409,
    "not_in_plan": 422,
    "move_needs_another": 422,
    "too_many_moves": 422,
    "migration_needs_reviewer": 403,
}


def from_domain(error: DomainError) -> ApiError:
    return ApiError(STATUS_BY_CODE[error.code], error.code, error.message, **error.details)


def body_too_large(limit: int) -> ApiError:
    return ApiError(
        413,
        "payload_too_large",
        f"Request bodies are limited to {limit} bytes.",
        limit=limit,
    )
