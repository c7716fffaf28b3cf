"""Django's ``flush``, which empties every table: the audit log's append-only triggers
(``lens.audit_guard``) would refuse to let its rows go, so they are lifted for the flush
and put back after it, whatever happens."""

from __future__ import annotations

from typing import Any

from django.core.management.commands import flush
from django.db import connections

from lens.audit_guard import install, uninstall


class Command(flush.Command):
    def handle(self, **options: Any) -> None:
        connection = connections[options["database"]]
        uninstall(connection)
        try:
            super().handle(**options)
        finally:
            install(connection)
