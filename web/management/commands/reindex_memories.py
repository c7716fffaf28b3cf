from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand
from django.db import transaction

from memory.search import reindex


class Command(BaseCommand):
    help = "Rebuild the memory search index from the stored records (one transaction)."

    def handle(self, *args: Any, **opts: Any) -> None:
        with transaction.atomic():
            count = reindex()
        self.stdout.write(f"Indexed {count} memor{'y' if count == 1 else 'ies'} for search.")
