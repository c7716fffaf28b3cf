from __future__ import annotations

from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "webhooks"
    verbose_name = "Webhooks"

    def ready(self) -> None:
        # Every audit append also queues the messages of the team's endpoints, in the
        # same transaction (the base layer knows listeners, not webhooks); the team's
        # endpoints are read with the append's own last statement.
        from lens.audit import listen
        from webhooks.outbox import endpoints_sql, queue_events

        listen(queue_events, reads=endpoints_sql())
