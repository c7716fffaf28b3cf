"""``erase_memory ID --reason "…" [--team SLUG] [--by USERNAME] [--no-vacuum]``: erase a
memory's content, label and tags everywhere they are stored (SPEC §15)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from lens.actors import Actor
from lens.core.errors import DomainError
from lens.models import Team
from memory.erasure import Erased, checkpoint, erase_memory, vacuum_erased

# Who erased it, when the command does not name a user: the person at the server.
OPERATOR = Actor(label="operator")


def _plural(count: int, one: str, many: str) -> str:
    return f"{count:,} {one if count == 1 else many}"


class Command(BaseCommand):
    help = (
        "Erase a memory: its content, label and tags leave the record, the search index, "
        "every stored composition and delivery that held it (their lines read [erased]) "
        "and recall. The id, kind, times, the content's SHA-256 and who erased it, when "
        "and why stay. It cannot be undone."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("id", help="the memory's id")
        parser.add_argument(
            "--reason",
            required=True,
            help="why it is erased (a request, a ticket): one line, at most 500 characters",
        )
        parser.add_argument("--team", help="the memory must be this team's (its slug)")
        parser.add_argument(
            "--by", metavar="USERNAME", help="the person erasing it, as the history names them"
        )
        parser.add_argument(
            "--no-vacuum",
            action="store_true",
            help="PostgreSQL: skip the VACUUM of the tables that held the memory",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        team = None
        if opts["team"] is not None:
            team = Team.objects.filter(slug=opts["team"]).first()
            if team is None:
                raise CommandError(f"No team {opts['team']!r}.")
        actor = OPERATOR
        if opts["by"] is not None:
            user = get_user_model().objects.filter(username=opts["by"]).first()
            if user is None:
                raise CommandError(f"No user {opts['by']!r}.")
            actor = Actor.for_user(user)
        try:
            erased = erase_memory(opts["id"], actor, opts["reason"], team=team)
        except DomainError as exc:
            raise CommandError(f"{exc.code}: {exc.message}") from None
        self.stdout.write(self._said(erased))
        self._scrub(erased, vacuum=not opts["no_vacuum"])

    def _said(self, erased: Erased) -> str:
        deliveries = _plural(erased.deliveries, "delivery", "deliveries")
        compositions = _plural(erased.compositions, "stored prompt", "stored prompts")
        return (
            f"Erased memory {erased.record_id} of agent {erased.agent} (team {erased.team}): "
            f"its content, label and tags are gone; {compositions} redacted "
            f"({deliveries}). content_sha256 {erased.content_sha256}"
        )

    def _scrub(self, erased: Erased, *, vacuum: bool) -> None:
        """Leave the database files without the old pages, as far as the database can."""
        done = checkpoint() if erased.log_truncated is None else erased.log_truncated
        if done is False:
            self.stderr.write(
                "The SQLite write-ahead log could not be truncated now (readers were busy): "
                "old pages may stay in the -wal file until its next checkpoint. Run "
                "`PRAGMA wal_checkpoint(TRUNCATE)` when the server is quiet."
            )
        if vacuum and vacuum_erased():
            self.stdout.write(
                "PostgreSQL: VACUUM done on the tables that held it (see docs/erasure.md "
                "for what it does not reach)."
            )
