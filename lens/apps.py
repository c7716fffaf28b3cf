from __future__ import annotations

from django.apps import AppConfig


class LensConfig(AppConfig):
    name = "lens"
    verbose_name = "Composition Lens"

    def ready(self) -> None:
        # Audit events of memberships and tokens, and a team's deletion with its log.
        # The PostgreSQL pool's connection check, without a round trip while busy.
        from lens import dbpool, signals  # noqa: F401
