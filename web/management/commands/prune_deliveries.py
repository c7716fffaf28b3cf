"""``prune_deliveries --older-than DAYS [--dry-run]``: the delivery audit's retention."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from memory.deliveries.retention import prune


def _days(value: str) -> int:
    """``value`` as a positive whole number of days, or a CommandError saying why not."""
    try:
        days = int(value.strip())
    except ValueError:
        raise CommandError(
            f"--older-than must be a whole number of days, at least 1 (got {value!r})."
        ) from None
    if days < 1:
        raise CommandError(f"--older-than must be at least 1 day (got {days}).")
    try:
        timezone.now() - timedelta(days=days)
    except OverflowError:
        raise CommandError(f"--older-than {days} reaches back before the year 1.") from None
    return days


def _plural(count: int, one: str, many: str) -> str:
    return f"{count:,} {one if count == 1 else many}"


class Command(BaseCommand):
    help = (
        "Remove deliveries older than DAYS days, and the stored compositions no delivery "
        "uses any more."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--older-than",
            required=True,
            metavar="DAYS",
            help="Remove deliveries recorded more than DAYS days ago (a whole number, >= 1).",
        )
        parser.add_argument(
            "--dry-run",
            action="store_true",
            help="Say what would be removed, and remove nothing.",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        days = _days(str(opts["older_than"]))
        older_than = timedelta(days=days)
        age = _plural(days, "day", "days")
        if opts["dry_run"]:
            would = prune(older_than, dry_run=True)
            self.stdout.write(
                f"Would remove {_plural(would.deliveries, 'delivery', 'deliveries')} older "
                f"than {age} and {_plural(would.compositions, 'composition', 'compositions')} "
                "no delivery would use then. Nothing was removed (dry run)."
            )
            return
        pruned = prune(older_than)
        self.stdout.write(
            f"Removed {_plural(pruned.deliveries, 'delivery', 'deliveries')} older than {age} "
            f"and {_plural(pruned.compositions, 'composition', 'compositions')} "
            "no delivery uses."
        )
