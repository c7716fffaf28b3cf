"""Webhook endpoints, the messages waiting to be sent to them, and every try."""

from __future__ import annotations

from django.db import models


class Endpoint(models.Model):
    """Where a team's events go. The secret signs them; it is shown once, when the
    endpoint is made or its secret rotated, and never again."""

    team = models.ForeignKey("lens.Team", on_delete=models.CASCADE, related_name="webhooks")
    url = models.CharField(max_length=2000)
    events = models.JSONField(default=list, help_text='Event types, or ["*"] for all')
    description = models.CharField(max_length=500, blank=True)
    secret = models.CharField(max_length=100, editable=False)
    # The secret before the last rotation signs too until this time, so receivers can
    # switch without losing a message.
    previous_secret = models.CharField(max_length=100, blank=True, editable=False)
    previous_until = models.DateTimeField(null=True, blank=True, editable=False)
    created_by = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Set when a message was given up after three days of failed tries, or when the
    # circuit breaker paused the endpoint after failed tries in a row; cleared by the
    # next success.
    failing_since = models.DateTimeField(null=True, blank=True)
    # Failed tries since the last success: the page warns before the endpoint fails.
    failures_in_a_row = models.PositiveIntegerField(default=0)
    last_success_at = models.DateTimeField(null=True, blank=True)
    # A task to send this endpoint's messages is waiting to start: a change that queues a
    # message then adds no task of its own (``webhooks.outbox.wake``).
    waking = models.BooleanField(default=False, editable=False)
    # While a worker sends one of its messages: no other worker or thread sends to it
    # before this time, so an endpoint has one request in flight and its messages leave
    # one at a time, oldest first (``webhooks.sending.claim``). A finished try clears it;
    # a worker killed mid-send leaves it, and it lapses with the message's own lease.
    sending_until = models.DateTimeField(null=True, blank=True, editable=False)
    # The circuit breaker (``webhooks.core.breaker``): after failed tries in a row the
    # endpoint is skipped until this time, then one message is tried.
    paused_until = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return self.url

    @property
    def failing(self) -> bool:
        return self.failing_since is not None


class Dispatch(models.Model):
    """One message for one endpoint: the outbox row, written in the transaction of the
    change it tells of. Every try of it carries the same ``message_id`` (the
    ``webhook-id`` header), so a receiver can drop a repeat."""

    class State(models.TextChoices):
        PENDING = "pending"
        SUCCEEDED = "succeeded"
        FAILED = "failed"  # given up after three days of tries

    # No index of their own: every read of dispatches starts from the partial indexes
    # below, and each index is written with every message.
    team = models.ForeignKey(
        "lens.Team", on_delete=models.CASCADE, related_name="+", db_index=False
    )
    endpoint = models.ForeignKey(
        Endpoint, on_delete=models.CASCADE, related_name="dispatches", db_index=False
    )
    message_id = models.CharField(max_length=40)
    event_type = models.CharField(max_length=40)
    body = models.TextField()
    created_at = models.DateTimeField()
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    tries = models.PositiveIntegerField(default=0)
    next_try_at = models.DateTimeField()
    # While a worker sends it: no other worker takes it before this time (a worker killed
    # mid-send leaves it; once past, the message is taken again).
    lease_until = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            # Its endpoint's messages, newest first (the settings page, a deletion).
            models.Index(fields=["endpoint", "-id"], name="webhook_dispatch_recent"),
            models.Index(
                fields=["next_try_at"],
                name="webhook_dispatch_waiting",
                condition=models.Q(state="pending"),
            ),
            # An endpoint's pending messages, oldest first (its sending task's query).
            models.Index(
                fields=["endpoint", "id"],
                name="webhook_dispatch_due",
                condition=models.Q(state="pending"),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.event_type} {self.message_id} → {self.endpoint_id}"


class Attempt(models.Model):
    """One try of a dispatch: what the receiver answered, how long it took, or what
    went wrong before it could answer."""

    dispatch = models.ForeignKey(Dispatch, on_delete=models.CASCADE, related_name="attempts")
    endpoint = models.ForeignKey(Endpoint, on_delete=models.CASCADE, related_name="attempts")
    at = models.DateTimeField()
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    duration_ms = models.PositiveIntegerField(default=0)
    error = models.CharField(max_length=300, blank=True)
    ok = models.BooleanField(default=False)

    class Meta:
        indexes = [models.Index(fields=["endpoint", "-id"], name="webhook_attempt_recent")]

    def __str__(self) -> str:
        return (
            f"{self.dispatch_id} at {self.at:%Y-%m-%d %H:%M:%S}: {self.status_code or self.error}"
        )


class PromptMark(models.Model):
    """The last composed prompt of an agent that ``prompt.changed`` compared against:
    its hash, the revision and the time it was composed at (blank until the first
    check), and whether a check is waiting to start."""

    agent = models.OneToOneField("lens.Agent", on_delete=models.CASCADE, related_name="+")
    prompt_sha256 = models.CharField(max_length=64, blank=True)
    revision = models.PositiveIntegerField(default=0)
    at = models.DateTimeField(null=True, blank=True)
    # A check of this agent is waiting to start: a change that may recompose it then
    # adds no task of its own (``webhooks.outbox.wake_checks``).
    waking = models.BooleanField(default=False)
    woken_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.agent_id}: {self.prompt_sha256[:12] or 'no check yet'}"
