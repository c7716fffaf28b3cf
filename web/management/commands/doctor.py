from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.models import Count, OuterRef, Subquery, Sum

from kvstore.models import Key, Version
from lens.agents import config_of, with_config
from lens.audit import kept_head, verify_all
from lens.core.revisions import canonical_config, config_sha256
from lens.models import Agent, ApiToken, AuthoredEntry, Revision, SectionDeclaration, Team
from memory.deliveries.retention import storage
from memory.models import MemoryRecord, SearchDoc
from memory.queries import unreadable_memories
from memory.search import index_health
from web.management.commands.verify_audit import audit_problem


class Command(BaseCommand):
    help = "Check the database and stores, print counts; exit 0 when healthy."

    def _report_audit(self, problems: list[str]) -> None:
        checked = list(verify_all())
        broken = [found for found in checked if found.first_bad is not None]
        problems.extend(audit_problem(found) for found in broken)
        self.stdout.write(f"audit log: {'ok' if not broken else f'{len(broken)} teams broken'}")
        # Each sound log's head, to be kept somewhere else (a ticket, a log shipper): a
        # log cut back later together with its chain head still verifies on its own
        # (on SQLite whoever holds the file can), but no longer holds this head.
        kept = [found for found in checked if found.first_bad is None and found.events]
        for found in kept:
            self.stdout.write(f"  keep this head: {found.team} {kept_head(found)}")
        if kept:
            self.stdout.write(
                "  check it later: python manage.py verify_audit --team SLUG --expect SEQ:SHA256"
            )

    def _report_kv(self) -> None:
        totals = Version.objects.aggregate(versions=Count("pk"), runes=Sum("runes"))
        keys = Key.objects.count()
        self.stdout.write(
            f"kv store: {keys} keys  {totals['versions']} versions  "
            f"{totals['runes'] or 0} chars stored"
        )
        largest = Key.objects.select_related("team").order_by("-latest_runes", "key")[:5]
        for row in largest:
            self.stdout.write(
                f"  largest: {row.team.slug}/{row.key} v{row.latest_version} {row.latest_runes} chars"
            )

    def _report_deliveries(self) -> None:
        """How much the delivery audit (SPEC §11) holds; informative, never a problem."""
        held = storage()
        line = (
            f"deliveries: {held.deliveries:,} recorded  "
            f"{held.compositions:,} distinct compositions  "
            f"{held.body_bytes:,} bytes stored (compositions, compressed)"
        )
        if held.table_bytes is not None:
            line += f"  {held.table_bytes:,} bytes in tables and indexes"
        self.stdout.write(line)

    def _report_memory(self, problems: list[str]) -> None:
        """Rows that no longer read as records (SPEC §6.3) and the search index."""
        unreadable = unreadable_memories()
        if unreadable:
            named = ", ".join(unreadable[:5]) + (" …" if len(unreadable) > 5 else "")
            problems.append(
                f"{len(unreadable)} stored memories no longer read as records (every reader "
                f"skips them): {named}"
            )
        # An erased memory keeps a search document without terms; one with terms would
        # mean an erasure left its words in the index.
        erased = MemoryRecord.objects.filter(erased_at__isnull=False)
        leaked = SearchDoc.objects.filter(record__in=erased).exclude(terms="").count()
        if leaked:
            problems.append(
                f"{leaked} erased memories still have search terms: run manage.py reindex_memories"
            )
        self.stdout.write(
            f"memory records: {'ok' if not unreadable else f'{len(unreadable)} unreadable'}"
            f" ({erased.count():,} erased)"
        )
        records, indexed = index_health()
        if records != indexed:
            problems.append(
                f"search index holds {indexed} of {records} memories: run manage.py reindex_memories"
            )
        self.stdout.write(
            f"search index: {'ok' if records == indexed else 'incomplete'} "
            f"({indexed} of {records} memories)"
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        problems: list[str] = []
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1")
        except Exception as exc:  # any driver error means the database is unusable
            raise CommandError(f"database: unreachable ({exc})") from exc
        self.stdout.write(f"database: ok ({connection.vendor}, {connection.settings_dict['NAME']})")

        executor = MigrationExecutor(connection)
        pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
        if pending:
            problems.append(f"{len(pending)} unapplied migration(s): run manage.py migrate")
        self.stdout.write(f"migrations: {'ok' if not pending else f'{len(pending)} pending'}")

        self.stdout.write(
            f"teams: {Team.objects.count()}  agents: {Agent.objects.count()}  "
            f"sections: {SectionDeclaration.objects.count()}  "
            f"authored entries: {AuthoredEntry.objects.count()}  "
            f"api tokens: {ApiToken.objects.filter(revoked_at__isnull=True).count()}"
        )
        invalid = unrecorded = 0
        newest = Revision.objects.filter(agent=OuterRef("pk")).order_by("-number")
        agents = with_config(Agent.objects.select_related("team")).annotate(
            newest_config=Subquery(newest.values("config_id")[:1])
        )
        for agent in agents.iterator(chunk_size=200):
            try:
                config = config_of(agent)
            except ValueError as exc:
                invalid += 1
                problems.append(f"agent {agent.team.slug}/{agent.slug} does not validate: {exc}")
                continue
            # Every change through the product writes a revision of what it left; rows
            # that differ from the newest one were changed some other way (SQL, say).
            if config_sha256(canonical_config(config)) != agent.newest_config:
                unrecorded += 1
                problems.append(
                    f"agent {agent.team.slug}/{agent.slug}: its declarations differ from its "
                    "newest revision; they were changed "
                    "outside the product: save it once in the admin to record them"
                )
        self.stdout.write(f"agent configs: {'ok' if not invalid else f'{invalid} invalid'}")
        self.stdout.write(
            f"revisions: {'ok' if not unrecorded else f'{unrecorded} agents changed outside them'}"
        )

        self._report_memory(problems)

        self._report_deliveries()

        self._report_kv()

        self._report_audit(problems)

        if problems:
            for problem in problems:
                self.stderr.write(f"problem: {problem}")
            raise CommandError(f"{len(problems)} problem(s) found")
        self.stdout.write("healthy")
