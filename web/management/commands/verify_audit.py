"""``verify_audit``: check every team's audit log chain (SPEC §15), and, with
``--expect``, that a team's log still holds a head printed earlier and kept elsewhere."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from lens.audit import Verified, missing_head, parse_kept_head, verify_all
from lens.models import Team


def verified_line(found: Verified) -> str:
    return f"{found.events} events verified, head {found.head}"


def audit_problem(found: Verified) -> str:
    return f"team {found.team}: audit log broken at seq {found.first_bad}: {found.problem}"


class Command(BaseCommand):
    help = (
        "Check each team's audit log: every event's hash, and that each seals the one "
        "before. Exit 1 naming the first event that was changed, removed or reordered. "
        "With --team and --expect SEQ:SHA256 (a head doctor printed earlier, kept "
        "elsewhere), exit 1 too unless the log still holds event SEQ with that hash: "
        "what catches a log cut back together with its chain head."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--team", help="check this team's log only (its slug)")
        parser.add_argument(
            "--expect",
            metavar="SEQ:SHA256",
            help="a head of this team's log kept from before: exit 1 unless the log still "
            "holds event SEQ with hash SHA256 (needs --team)",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        slug, expect = opts["team"], opts["expect"]
        kept = None
        if expect is not None:
            if slug is None:
                raise CommandError("--expect needs --team: a kept head is one team's.")
            try:
                kept = parse_kept_head(expect)
            except ValueError as exc:
                raise CommandError(str(exc)) from exc
        if slug is not None and not Team.objects.filter(slug=slug).exists():
            raise CommandError(f"No team {slug!r}.")
        # Each team's line is exactly SPEC §15's; when several teams are checked, a line
        # naming the team comes before its own (a broken team's problem names it anyway).
        several = slug is None and Team.objects.count() > 1
        broken = []
        for found in verify_all(slug):
            if found.first_bad is None:
                if kept is not None:
                    self._check_kept(found, *kept)
                if several:
                    self.stdout.write(f"team {found.team}")
                self.stdout.write(verified_line(found))
                if kept is not None:
                    self.stdout.write(f"kept head {kept[0]} holds")
            else:
                broken.append(found)
                self.stderr.write(audit_problem(found))
        if broken:
            raise CommandError(f"{len(broken)} team(s) with a broken audit log")

    def _check_kept(self, found: Verified, seq: int, sha256: str) -> None:
        # One line, and nothing on stdout: the chain itself passed, and printing its
        # "verified" line first would read as a pass.
        problem = missing_head(Team.objects.get(slug=found.team), seq, sha256)
        if problem is not None:
            raise CommandError(
                f"team {found.team}: audit log does not hold the kept head at seq {seq}: {problem}"
            )
