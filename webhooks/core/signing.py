"""Standard Webhooks signatures (https://www.standardwebhooks.com): ``webhook-id``,
``webhook-timestamp`` and ``webhook-signature: v1,<base64 HMAC-SHA256>`` over
``id.timestamp.body``, made by the specification's own library so its verifiers agree.

While a rotated secret's grace period lasts, the message is signed with both secrets
(space-separated signatures), so a receiver still holding the old one keeps verifying.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from standardwebhooks.webhooks import Webhook

USER_AGENT = "Composition-Lens-Webhooks/1"


def headers(message_id: str, at: datetime, body: str, secrets: Sequence[str]) -> dict[str, str]:
    """The headers of one try of a message. ``at`` is the time of this try: the
    specification's verifiers refuse timestamps more than five minutes off."""
    if not secrets:
        raise ValueError("a message is signed with at least one secret")
    moment = at.astimezone(UTC)
    signatures = " ".join(Webhook(secret).sign(message_id, moment, body) for secret in secrets)
    return {
        "content-type": "application/json",
        "user-agent": USER_AGENT,
        "webhook-id": message_id,
        "webhook-timestamp": str(int(moment.timestamp())),
        "webhook-signature": signatures,
    }
