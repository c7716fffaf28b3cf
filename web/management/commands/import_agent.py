"""``import_agent FILE --team T [--slug NEW]``: recreate an agent from a bundle (SPEC §15)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from lens.core.errors import DomainError
from lens.models import Team
from memory.bundles.importing import import_bundle
from memory.core.bundle_format import counts_in_words


class Command(BaseCommand):
    help = (
        "Recreate an agent from a bundle written by export_agent, with the same ids, "
        "times, revisions, memories, decisions and deliveries, in one transaction. A "
        "bundle that is cut short, altered, of another format or version, or whose ids "
        "are taken here is refused with the line it fails on, and nothing is written."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="the bundle (.jsonl.gz)")
        parser.add_argument("--team", required=True, help="the team to import into (its slug)")
        parser.add_argument("--slug", help="import the agent under this slug instead of its own")

    def handle(self, *args: Any, file: str, team: str, slug: str | None, **opts: Any) -> None:
        found = Team.objects.filter(slug=team).first()
        if found is None:
            raise CommandError(f"No team {team!r}; create it with create_team.")
        try:
            imported = import_bundle(file, found, slug=slug)
        except DomainError as exc:
            raise CommandError(f"{file}: {exc.message}") from None
        except OSError as exc:
            raise CommandError(f"Cannot read {file}: {exc.strerror or exc}") from None
        # A bundle whose declarations were not its newest revision gets one more (via import).
        added = " (its declarations as a new revision)" if imported.recorded_revision else ""
        self.stdout.write(
            f"Imported agent {imported.agent.slug} into team {found.slug}: "
            f"{counts_in_words(imported.counts)}; at revision {imported.revision}{added}."
        )
        if imported.held:
            self.stdout.write(
                f"{imported.held} memor{'y' if imported.held == 1 else 'ies'} the bundle says "
                "the system approved read as an instruction to the model: waiting for a "
                "person in the approval queue (instruction-shaped)."
            )
        self.stdout.write(f"bundle sha256 {imported.manifest.sha256}")
