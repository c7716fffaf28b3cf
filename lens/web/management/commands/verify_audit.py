"""``verify_audit``: check every team's audit log chain (SPEC §15)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from lens.audit import Verified, verify_all
from lens.models import Team


def verified_line(found: Verified) -> str:
    return f"{found.events} events verified, head {found.head}"


def audit_problem(found: Verified) -> str:
    return f"team {found.team}: audit log broken at seq {found.first_bad}: {found.problem}"


class Command(BaseCommand):
    help = (
        "Check each team's audit log: every event's hash, and that each seals the one "
        "before. Exit 1 naming the first event that was changed, removed or reordered."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--team", help="check this team's log only (its slug)")

    def handle(self, *args: Any, **opts: Any) -> None:
        slug = opts["team"]
        if slug is not None and not Team.objects.filter(slug=slug).exists():
            raise CommandError(f"No team {slug!r}.")
        # Each team's line is exactly SPEC §15's; when several teams are checked, a line
        # naming the team comes before its own (a broken team's problem names it anyway).
        several = slug is None and Team.objects.count() > 1
        broken = []
        for found in verify_all(slug):
            if found.first_bad is None:
                if several:
                    self.stdout.write(f"team {found.team}")
                self.stdout.write(verified_line(found))
            else:
                broken.append(found)
                self.stderr.write(audit_problem(found))
        if broken:
            raise CommandError(f"{len(broken)} team(s) with a broken audit log")
