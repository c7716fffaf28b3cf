"""``/api/webhooks``: the token's team's webhook endpoints (SPEC §16). The secret is in
the creation's answer and a rotation's, never in a listing."""

from __future__ import annotations

from datetime import datetime

from ninja import Router, Status
from ninja.params.functions import Path
from pydantic import BaseModel, Field

from lens.actors import Actor
from web.api.auth import ApiRequest, team_of, token_of
from web.api.params import INT_MAX
from webhooks.core.addresses import URL_MAX
from webhooks.endpoints import (
    DESCRIPTION_MAX,
    create_endpoint,
    delete_endpoint,
    get_endpoint,
    list_endpoints,
    recent_attempts,
    rotate_secret,
)
from webhooks.models import Endpoint

router = Router(tags=["webhooks"])


class WebhookIn(BaseModel):
    # Lengths are checked by the operation, which says which limit and by how much.
    url: str = Field(max_length=URL_MAX * 2)
    events: list[str] = Field(max_length=100)
    description: str = Field("", max_length=DESCRIPTION_MAX * 2)


class CreatedOut(BaseModel):
    id: int
    url: str
    events: list[str]
    secret: str  # shown here once


class WebhookOut(BaseModel):
    id: int
    url: str
    events: list[str]
    description: str
    failing: bool

    @classmethod
    def of(cls, row: Endpoint) -> WebhookOut:
        return cls(
            id=row.pk,
            url=row.url,
            events=row.events,
            description=row.description,
            failing=row.failing,
        )


class WebhookList(BaseModel):
    webhooks: list[WebhookOut]


class RotatedOut(BaseModel):
    id: int
    secret: str  # the new one, shown here once; the old one signs too for 24 hours


class AttemptOut(BaseModel):
    at: datetime
    message_id: str
    event_type: str
    status: int | None
    duration_ms: int
    error: str


class AttemptList(BaseModel):
    attempts: list[AttemptOut]


def _actor(request: ApiRequest) -> Actor:
    return Actor.for_token(token_of(request))


@router.post("", response={201: CreatedOut})
def create(request: ApiRequest, body: WebhookIn) -> Status[CreatedOut]:
    made = create_endpoint(
        team_of(request), _actor(request), body.url, body.events, body.description
    )
    endpoint = made.endpoint
    return Status(
        201,
        CreatedOut(id=endpoint.pk, url=endpoint.url, events=endpoint.events, secret=made.secret),
    )


@router.get("", response=WebhookList)
def listing(request: ApiRequest) -> WebhookList:
    return WebhookList(webhooks=[WebhookOut.of(row) for row in list_endpoints(team_of(request))])


@router.delete("/{webhook_id}", response={204: None})
def delete(request: ApiRequest, webhook_id: int = Path(..., ge=1, le=INT_MAX)) -> Status[None]:
    delete_endpoint(team_of(request), _actor(request), webhook_id)
    return Status(204, None)


@router.post("/{webhook_id}/rotate", response=RotatedOut)
def rotate(request: ApiRequest, webhook_id: int = Path(..., ge=1, le=INT_MAX)) -> RotatedOut:
    made = rotate_secret(team_of(request), _actor(request), webhook_id)
    return RotatedOut(id=made.endpoint.pk, secret=made.secret)


@router.get("/{webhook_id}/attempts", response=AttemptList)
def attempts(request: ApiRequest, webhook_id: int = Path(..., ge=1, le=INT_MAX)) -> AttemptList:
    """The endpoint's newest tries (at most 50), newest first."""
    endpoint = get_endpoint(team_of(request), webhook_id)
    return AttemptList(
        attempts=[
            AttemptOut(
                at=row.at,
                message_id=row.dispatch.message_id,
                event_type=row.dispatch.event_type,
                status=row.status_code,
                duration_ms=row.duration_ms,
                error=row.error,
            )
            for row in recent_attempts(endpoint)
        ]
    )
