"""The operations on a team's webhook endpoints (SPEC §16): make one (its secret shown
once), list them, delete one, rotate its secret, resend a message. The API, the
settings page and the admin call these; each change appends its audit event in the same
transaction.
"""

from __future__ import annotations

import base64
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from lens.actors import Actor
from lens.audit import Entry, append
from lens.core.audit_actions import ACTIONS
from lens.core.errors import DomainError, InvalidInput
from lens.models import Team
from webhooks.core.addresses import Refused
from webhooks.core.topics import DERIVED, EVERYTHING, unknown_types
from webhooks.models import Attempt, Dispatch, Endpoint
from webhooks.outbox import Outgoing, queue
from webhooks.posting import checked

EVENT_TYPES = tuple(sorted(ACTIONS | set(DERIVED)))
DESCRIPTION_MAX = 500
# Every audit append reads the team's endpoints: a team keeps a handful, never hundreds.
ENDPOINTS_MAX = 20
# After a rotation the old secret signs too for this long, so receivers can switch.
ROTATION_GRACE = timedelta(hours=24)
RECENT_ATTEMPTS = 50


class WebhookUrlRefused(DomainError):
    code = "webhook_url_refused"


class WebhookNotFound(DomainError):
    code = "webhook_not_found"


class MessageNotFound(DomainError):
    code = "webhook_message_not_found"


class TooManyWebhooks(DomainError):
    code = "too_many_webhooks"


@dataclass(frozen=True)
class Created:
    endpoint: Endpoint
    secret: str  # shown once, here


def new_secret() -> str:
    """``whsec_`` and 32 random bytes in base64, as Standard Webhooks libraries read it."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


def check_url(url: str) -> str:
    """``url`` when a webhook may call it, else ``WebhookUrlRefused`` saying why."""
    try:
        checked(
            url,
            allow_http=settings.WEBHOOKS_ALLOW_HTTP,
            allow_private=settings.WEBHOOKS_ALLOW_PRIVATE,
        )
    except Refused as refused:
        raise WebhookUrlRefused(str(refused), url=url[:200]) from None
    return url


def check_events(events: Sequence[str]) -> list[str]:
    """The event types, each once, in the order given; every one must be known."""
    if not events:
        raise InvalidInput(
            'events: name at least one event type, or "*" for all',
            errors=[{"loc": "events", "message": "at least one event type"}],
        )
    unknown = unknown_types(events, EVENT_TYPES)
    if unknown:
        raise InvalidInput(
            f"events: {unknown[0][:60]!r} is not an event type",
            errors=[
                {"loc": "events", "message": f"unknown event type {name[:60]!r}"}
                for name in unknown
            ],
            known=[EVERYTHING, *EVENT_TYPES],
        )
    return list(dict.fromkeys(events))


def create_endpoint(
    team: Team, actor: Actor, url: str, events: Sequence[str], description: str = ""
) -> Created:
    if len(description) > DESCRIPTION_MAX:
        raise InvalidInput(
            f"description: at most {DESCRIPTION_MAX} characters; this one has {len(description)}",
            errors=[{"loc": "description", "message": f"at most {DESCRIPTION_MAX} characters"}],
        )
    wanted = check_events(events)
    check_url(url)
    secret = new_secret()
    with transaction.atomic():
        # The team's row, locked: two creations cannot both pass the count.
        Team.objects.select_for_update().filter(pk=team.pk).first()
        if Endpoint.objects.filter(team=team).count() >= ENDPOINTS_MAX:
            raise TooManyWebhooks(
                f"A team has at most {ENDPOINTS_MAX} webhooks; delete one first.",
                limit=ENDPOINTS_MAX,
            )
        endpoint = Endpoint.objects.create(
            team=team,
            url=url,
            events=wanted,
            description=description,
            secret=secret,
            created_by=actor.label,
        )
        append(team.pk, actor, [_entry("webhook.created", endpoint, events=wanted)])
    return Created(endpoint, secret)


def _entry(action: str, endpoint: Endpoint, **details: Any) -> Entry:
    # The host, never the whole URL: a query string may hold a receiver's own token.
    host = endpoint.url.split("://", 1)[-1].split("/", 1)[0].rsplit("@", 1)[-1]
    return Entry(action, "webhook", str(endpoint.pk), None, {"host": host, **details})


def get_endpoint(team: Team, pk: int) -> Endpoint:
    found = Endpoint.objects.filter(team=team, pk=pk).first()
    if found is None:
        raise WebhookNotFound(f"No webhook {pk} in this team.", id=pk)
    return found


def list_endpoints(team: Team) -> list[Endpoint]:
    return list(Endpoint.objects.filter(team=team).order_by("id"))


def delete_endpoint(team: Team, actor: Actor, pk: int) -> None:
    with transaction.atomic():
        endpoint = get_endpoint(team, pk)
        append(team.pk, actor, [_entry("webhook.deleted", endpoint)])
        endpoint.delete()


def rotate_secret(team: Team, actor: Actor, pk: int) -> Created:
    """A new secret for endpoint ``pk`` (shown once); the old one signs too for
    ``ROTATION_GRACE``."""
    secret = new_secret()
    with transaction.atomic():
        endpoint = Endpoint.objects.select_for_update().filter(team=team, pk=pk).first()
        if endpoint is None:
            raise WebhookNotFound(f"No webhook {pk} in this team.", id=pk)
        now = timezone.now()
        endpoint.previous_secret, endpoint.previous_until = endpoint.secret, now + ROTATION_GRACE
        endpoint.secret = secret
        endpoint.save(update_fields=["secret", "previous_secret", "previous_until"])
        append(team.pk, actor, [_entry("webhook.rotated", endpoint)])
    return Created(endpoint, secret)


def recent_attempts(endpoint: Endpoint, limit: int = RECENT_ATTEMPTS) -> list[Attempt]:
    """The endpoint's newest tries, newest first, each with its dispatch."""
    rows = Attempt.objects.filter(endpoint=endpoint).select_related("dispatch")
    return list(rows.order_by("-id")[:limit])


def waiting_count(endpoint: Endpoint) -> int:
    return Dispatch.objects.filter(endpoint=endpoint, state=Dispatch.State.PENDING).count()


def waiting_counts(team: Team) -> dict[int, int]:
    """How many messages wait for each of the team's endpoints (by endpoint id; an
    endpoint with none is absent), in one query however many endpoints there are."""
    rows = (
        Dispatch.objects.filter(team=team, state=Dispatch.State.PENDING)
        .order_by()
        .values_list("endpoint")
        .annotate(waiting=Count("id"))
    )
    return dict(rows)


def resend(team: Team, pk: int, dispatch_id: int) -> Dispatch:
    """Send a message to endpoint ``pk`` again, now: the same ``webhook-id`` and body (a
    receiver that kept it drops the repeat), tried on the usual schedule from now."""
    endpoint = get_endpoint(team, pk)
    original = Dispatch.objects.filter(endpoint=endpoint, pk=dispatch_id).first()
    if original is None:
        raise MessageNotFound(f"No message {dispatch_id} for this webhook.", id=dispatch_id)
    now = timezone.now()
    again = Outgoing(
        team.pk, endpoint.pk, original.message_id, original.event_type, original.body, now
    )
    with transaction.atomic():
        queue([again])
        return Dispatch.objects.filter(endpoint=endpoint, message_id=again.message_id).latest("id")
