"""``export_agent SLUG --team T -o FILE``: an agent as a portable bundle (SPEC §15)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from lens.agents import get_agent
from lens.core.errors import DomainError
from lens.models import Team
from memory.bundles.exporting import export_bundle
from memory.core.bundle_format import counts_in_words


class Command(BaseCommand):
    help = (
        "Write an agent — declarations, revisions, memories, decisions, stored "
        "compositions, deliveries and its audit events — to one gzip-compressed JSON "
        "Lines bundle that import_agent reads (docs/bundles.md)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug", help="the agent's slug")
        parser.add_argument("--team", required=True, help="the agent's team (its slug)")
        parser.add_argument(
            "-o", "--output", required=True, help="the file to write (replaced if it exists)"
        )

    def handle(self, *args: Any, slug: str, team: str, output: str, **opts: Any) -> None:
        found = Team.objects.filter(slug=team).first()
        if found is None:
            raise CommandError(f"No team {team!r}.")
        try:
            agent = get_agent(found, slug)
        except DomainError as exc:
            raise CommandError(exc.message) from None
        target = Path(output)
        exported = export_bundle(agent)
        # Written beside the target and renamed into place once whole: an export that
        # fails leaves no half-written bundle under the name asked for.
        try:
            descriptor, partial = tempfile.mkstemp(
                prefix=f".{target.name}.", suffix=".part", dir=target.parent
            )
        except OSError as exc:
            exported.close()
            raise CommandError(f"Cannot write {output}: {exc.strerror or exc}") from None
        try:
            with os.fdopen(descriptor, "wb") as out:
                exported.write_to(out)
            os.replace(partial, target)
        except BaseException:
            Path(partial).unlink(missing_ok=True)
            raise
        manifest = exported.manifest
        self.stdout.write(
            f"Exported agent {agent.slug} of team {found.slug} to {output} "
            f"({exported.size:,} bytes): {counts_in_words(manifest['counts'])}."
        )
        self.stdout.write(f"sha256 {manifest['sha256']}")
