"""Signatures the Standard Webhooks library's own verifier accepts, with one secret or,
during a rotation, two."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from webhooks.core.signing import headers

OLD = "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
NEW = "whsec_" + "QmVzdCBzZWNyZXQgZXZlciwgcmVhbGx5IQ=="
BODY = '{"data":{"seq":1},"timestamp":"2026-01-01T00:00:00.000000Z","type":"kv.written"}'


def test_the_verifier_accepts_what_is_signed() -> None:
    now = datetime.now(UTC)
    signed = headers("msg_1", now, BODY, [NEW])
    assert Webhook(NEW).verify(BODY, signed) == {
        "data": {"seq": 1},
        "timestamp": "2026-01-01T00:00:00.000000Z",
        "type": "kv.written",
    }
    assert signed["webhook-timestamp"] == str(int(now.timestamp()))
    assert signed["webhook-signature"].startswith("v1,")


def test_during_a_rotation_either_secret_verifies() -> None:
    signed = headers("msg_1", datetime.now(UTC), BODY, [NEW, OLD])
    assert len(signed["webhook-signature"].split(" ")) == 2
    Webhook(NEW).verify(BODY, signed)
    Webhook(OLD).verify(BODY, signed)


def test_another_secret_a_changed_body_or_an_old_try_fails() -> None:
    signed = headers("msg_1", datetime.now(UTC), BODY, [NEW])
    with pytest.raises(WebhookVerificationError):
        Webhook(OLD).verify(BODY, signed)
    with pytest.raises(WebhookVerificationError):
        Webhook(NEW).verify(BODY.replace("1", "2"), signed)
    stale = headers("msg_1", datetime.now(UTC) - timedelta(minutes=6), BODY, [NEW])
    with pytest.raises(WebhookVerificationError, match="too old"):
        Webhook(NEW).verify(BODY, stale)


def test_a_message_needs_a_secret() -> None:
    with pytest.raises(ValueError, match="at least one secret"):
        headers("msg_1", datetime.now(UTC), BODY, [])
