"""``/api/audit``: the token's team's audit log, oldest first, by cursor (SPEC §15)."""

from __future__ import annotations

from typing import Any

from ninja import Query, Router
from pydantic import BaseModel, Field

from lens.audit import event_data, events_after
from web.api.auth import ApiRequest, team_of
from web.api.params import INT_MAX

router = Router(tags=["audit"])


class AuditParams(BaseModel):
    after: int = Field(0, ge=0, le=INT_MAX)  # the last ``seq`` already read
    limit: int = Field(100, ge=1, le=1000)
    agent: str = Field("", max_length=64)
    action: str = Field("", max_length=40)


class AuditPage(BaseModel):
    # Each event exactly as its hash covers it (``lens.audit.event_data``).
    events: list[dict[str, Any]]
    next_after: int | None


@router.get("", response=AuditPage)
def list_events(request: ApiRequest, params: Query[AuditParams]) -> AuditPage:
    """Events with ``seq`` above ``after``, oldest first; ``next_after`` is the cursor of
    the next page (null: this is the last)."""
    rows = events_after(
        team_of(request), params.after, params.limit, agent=params.agent, action=params.action
    )
    more = len(rows) > params.limit
    rows = rows[: params.limit]
    return AuditPage(
        events=[event_data(row) for row in rows],
        next_after=rows[-1].seq if more else None,
    )
