"""Importing a bundle (SPEC §15): the agent recreated in a team of this instance with
the same ids, times, revisions, memories, decisions, stored compositions and
deliveries, so every delivery keeps its ``prompt_sha256`` and composition and the live
composition is the one the bundle's instance composed.

The file is read twice. First alone: its gzip data, every line, the counts and the
hash — a bundle that was cut short, altered or mixed up is refused before the database
is touched. Then again, in one transaction, writing as it reads, a few hundred rows at
a time (memory holds one batch, never the whole agent), checking what only the database
can tell: ids already taken, references to lines before. Any problem raises, with the
line it is on, and the transaction takes every row with it: nothing is written.

The first reading also checks what the bundle's audit lines attest
(``memory.bundles.attestation``): their chain, and each memory's content and revision's
config against the hashes their events sealed, so a line edited and the manifest's hash
computed again is refused. The second reading checks that the lines are the ones the
first read (the manifest's hash, which the reader checks again after the last line).

What is written bypasses the operations that make these rows in normal use: they would
append an audit event per revision, save and decision, and renumber and retime
everything. The import is one audit event of its own (``agent.created``, ``via``
import, with the bundle's hash); the bundle's ``audit`` lines stay what they were, the
source team's events, checked and not replayed into this team's chain (their numbers
and hashes belong to the source's log).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from os import PathLike
from typing import Any, TypeVar

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.utils import timezone

from lens.actors import SYSTEM, Actor
from lens.agents import check_slug, write_config
from lens.audit import Entry, append_one
from lens.core.config import AgentConfig
from lens.models import Agent, Revision, Team, Via
from lens.revisions import keep_config, record_revision, revisions_of
from memory import search
from memory.bundles.attestation import attested
from memory.core.bundle_format import BundleReader, InvalidBundle, Manifest, Numbered
from memory.core.bundle_lines import (
    TYPES,
    AgentLine,
    CompositionLine,
    DeliveryCache,
    DeliveryLine,
    EventLine,
    MemoryLine,
    MigratedPromotionLine,
    PromotionLine,
    RevisionLine,
    RoutingCaseLine,
)
from memory.core.outcome import INSTRUCTION_SHAPED, system_may_approve
from memory.core.routing_eval import CASES_MAX
from memory.core.screening import screen
from memory.deliveries.ledger import packed
from memory.models import (
    HOLDING,
    CompositionMemory,
    Delivery,
    EventKind,
    MemoryEvent,
    MemoryRecord,
    MigratedPromotion,
    Promotion,
    SearchDoc,
    StoredComposition,
    new_event,
)
from memory.registry import UnknownRoutingSpec, check_spec_key
from memory.routing_cases import import_cases

# Lines written per batch: a few hundred rows a statement, and at most this many bytes
# of lines held at once (compositions are large).
BATCH_LINES = 500
BATCH_BYTES = 8 * 1024 * 1024

Source = str | PathLike[str]


class BundleConflict(InvalidBundle):
    """A sound bundle that this team or instance cannot take as it is: its slug or an id
    it holds is taken here, or it names a routing spec this instance does not offer."""

    code = "bundle_conflict"


@dataclass(frozen=True)
class Imported:
    agent: Agent
    manifest: Manifest
    revision: int  # the agent's newest revision
    # The bundle's declarations were not its newest revision's config (rows edited by
    # hand), so the import recorded them as a revision of its own (``via`` import).
    recorded_revision: bool
    # Memories the file says the system approved that read as an instruction to the
    # model: they came in pending, reason ``instruction-shaped`` (SPEC §19.4).
    held: int = 0

    @property
    def counts(self) -> dict[str, int]:
        return {kind: self.manifest.counts.get(kind, 0) for kind in TYPES}


def verify_bundle(path: Source) -> Manifest:
    """Read the whole bundle at ``path`` and check it, writing nothing: its manifest,
    or an InvalidBundle naming the first line that is wrong."""
    with open(path, "rb") as stream:
        reader = BundleReader(stream)
        for _numbered in attested(reader.lines()):
            pass
        return reader.manifest


def import_bundle(
    path: Source, team: Team, *, slug: str | None = None, actor: Actor = SYSTEM
) -> Imported:
    """Recreate the agent of the bundle at ``path`` in ``team`` (as ``slug`` when given,
    else under its own slug), all or nothing.

    Raises InvalidBundle (the file) or BundleConflict (this instance), naming the line,
    or InvalidSlug, having written nothing.
    """
    if slug is not None:
        check_slug(slug)
    checked = verify_bundle(path)
    with open(path, "rb") as stream, transaction.atomic():
        reader = BundleReader(stream)
        # The lines hash to this manifest's sha256 (the reader checks it after the last
        # line, before anything commits): the same as the first reading's, they are the
        # lines it checked, so what they attest needs no second reading.
        if reader.manifest.sha256 != checked.sha256:
            raise InvalidBundle(1, "the file changed while it was imported")
        return _Import(team, slug, actor, reader.manifest).run(reader.lines())


_L = TypeVar("_L")


def _batches(lines: Iterable[Numbered]) -> Iterator[list[Numbered]]:
    """Consecutive lines of one type, at most BATCH_LINES and about BATCH_BYTES."""
    batch: list[Numbered] = []
    size = 0
    for numbered in lines:
        full = len(batch) >= BATCH_LINES or size >= BATCH_BYTES
        if batch and (full or numbered.line.type != batch[0].line.type):
            yield batch
            batch, size = [], 0
        batch.append(numbered)
        size += numbered.size
    if batch:
        yield batch


def _typed(batch: Sequence[Numbered], kind: type[_L]) -> list[tuple[int, _L]]:
    found: list[tuple[int, _L]] = []
    for numbered in batch:
        assert isinstance(numbered.line, kind)  # a batch holds lines of one type
        found.append((numbered.number, numbered.line))
    return found


def _cache_columns(cache: DeliveryCache | None) -> dict[str, Any]:
    """A delivery row's prompt-cache columns (SPEC §17) from its line: as recorded at the
    source, against the same previous delivery (the bundle holds them all, in order)."""
    change = None if cache is None else cache.first_change
    return {
        "cache_prefix_tokens": None if cache is None else cache.prefix_tokens,
        "cache_prefix_chars": None if cache is None else cache.prefix_chars,
        "changed_section": None if change is None else change.section,
        "changed_background_section": None if change is None else change.background_section,
    }


def _first_repeat(items: Sequence[tuple[int, Any]], key: Callable[[Any], str]) -> int | None:
    """The number of the first line whose key an earlier line of ``items`` has."""
    seen: set[str] = set()
    for number, line in items:
        if key(line) in seen:
            return number
        seen.add(key(line))
    return None


class _Import:
    def __init__(self, team: Team, slug: str | None, actor: Actor, manifest: Manifest) -> None:
        self.team = team
        self.slug = slug
        self.actor = actor
        self.manifest = manifest
        self.agent: Agent | None = None
        self.config: AgentConfig | None = None
        self.users: dict[str, int | None] = {}
        self.cases: list[tuple[int, RoutingCaseLine]] = []
        # Memories the file says the system approved that read as instructions: they
        # come in waiting for a person (``_instructions_the_system_approved``).
        self.held = 0
        self.held_rows: list[tuple[str, str | None]] = []  # (memory id, its section)

    def run(self, lines: Iterable[Numbered]) -> Imported:
        writers: dict[str, Callable[[Sequence[Numbered]], None]] = {
            "agent": self._agent,
            "revision": self._revisions,
            "routing_case": self._routing_cases,
            "memory": self._memories,
            "promotion": self._promotions,
            "migrated_promotion": self._migrated_promotions,
            "event": self._events,
            "composition": self._compositions,
            "delivery": self._deliveries,
            "audit": lambda batch: None,  # checked by ``attested``; never replayed
        }
        for batch in _batches(lines):
            writers[batch[0].line.type](batch)
        # The reader checked the counts and the hash once the last line was read.
        agent, config = self.agent, self.config
        # The manifest counts exactly one agent line (the reader checks).
        assert agent is not None
        assert config is not None
        self._write_cases(agent)
        self._held_events(agent)
        number, digest, recorded = self._declarations_revision(agent, config)
        append_one(
            self.team.pk,
            self.actor,
            Entry(
                "agent.created",
                "agent",
                agent.slug,
                agent.slug,
                {
                    "via": Via.IMPORT.value,
                    "bundle_sha256": self.manifest.sha256,
                    "revision": number,
                    "config_sha256": digest,
                    "source_agent": self.manifest.agent,
                    "counts": {kind: self.manifest.counts.get(kind, 0) for kind in TYPES},
                },
            ),
        )
        return Imported(agent, self.manifest, number, recorded, self.held)

    @property
    def _agent_row(self) -> Agent:
        assert self.agent is not None  # line 2 is the agent line (the reader checks)
        return self.agent

    # --- each type ---------------------------------------------------------------------

    def _agent(self, batch: Sequence[Numbered]) -> None:
        ((number, line),) = _typed(batch, AgentLine)
        if line.slug != self.manifest.agent:
            raise InvalidBundle(number, "the agent line's slug is not the manifest's agent")
        slug = self.slug or line.slug
        try:
            check_spec_key(line.config.routing_spec)
        except UnknownRoutingSpec as exc:
            raise BundleConflict(number, exc.message) from None
        taken = BundleConflict(
            number,
            f"team {self.team.slug!r} already has an agent {slug!r}: import it under another slug",
        )
        if Agent.objects.filter(team=self.team, slug=slug).exists():
            raise taken
        try:
            with transaction.atomic():  # a savepoint: a racing import of the same slug
                Agent.objects.create(team=self.team, slug=slug, name=line.config.name)
        except IntegrityError:
            raise taken from None
        agent, _created = write_config(self.team, slug, line.config)
        # The row's own times, which ``auto_now`` set to now (``update`` leaves them be).
        Agent.objects.filter(pk=agent.pk).update(
            created_at=line.created_at, updated_at=line.updated_at
        )
        agent.created_at, agent.updated_at = line.created_at, line.updated_at
        self.agent, self.config = agent, line.config

    def _revisions(self, batch: Sequence[Numbered]) -> None:
        # The bundle's history, inserted as it was (numbers, times, who, summaries), a
        # batch at a time: these revisions are no change made now, so they are not
        # recorded one by one through ``record_revision``, which would renumber and
        # retime them, summarise them again and append an event each. The one change
        # an import can make, declarations that are not the newest revision's, is
        # recorded through it (``_declarations_revision``).
        items = _typed(batch, RevisionLine)
        for _number, line in items:
            keep_config(line.config_sha256, line.config_text)
        Revision.objects.bulk_create(
            Revision(
                agent=self._agent_row,
                number=line.revision,
                created_at=line.created_at,
                actor=line.actor,
                via=line.via,
                approved_by=line.approved_by,
                config_id=line.config_sha256,
                summary=line.summary,
            )
            for _number, line in items
        )

    def _routing_cases(self, batch: Sequence[Numbered]) -> None:
        self.cases += _typed(batch, RoutingCaseLine)
        if len(self.cases) > CASES_MAX:
            raise InvalidBundle(
                self.cases[CASES_MAX][0], f"an agent holds at most {CASES_MAX:,} routing cases"
            )

    def _write_cases(self, agent: Agent) -> None:
        """The cases, after every line was read (the import's event counts them)."""
        if not self.cases:
            return
        seen: set[str] = set()
        for number, line in self.cases:
            if line.name in seen:
                raise InvalidBundle(number, f"a second routing case named {line.name!r}")
            seen.add(line.name)
        import_cases(agent, [line for _number, line in self.cases])

    def _memories(self, batch: Sequence[Numbered]) -> None:
        agent = self._agent_row
        items = _typed(batch, MemoryLine)
        self._ids_free(items, MemoryRecord, "memory")
        # A memory supersedes one on an earlier line: of this batch, or already written.
        earlier: set[str] = set()
        wanted: dict[str, int] = {}
        for number, line in items:
            if line.supersedes is not None and line.supersedes not in earlier:
                wanted.setdefault(line.supersedes, number)
            earlier.add(line.id)
        found = set(
            MemoryRecord.objects.filter(agent=agent, pk__in=list(wanted)).values_list(
                "pk", flat=True
            )
        )
        for missing, number in wanted.items():
            if missing not in found:
                raise InvalidBundle(
                    number, f"it supersedes {missing}, which is not a memory on an earlier line"
                )
        records = [
            MemoryRecord(
                id=line.id,
                agent=agent,
                kind=line.kind,
                content=line.content,
                tags=line.tags,
                label=line.label,
                supersedes_id=line.supersedes,
                created_at=line.created_at,
                valid_until=line.valid_until,
                content_sha256=line.content_sha256 or "",
                erased_at=line.erased_at,
                erased_by=line.erased_by,
                erase_reason=line.erase_reason,
                session=line.session,
            )
            for _number, line in items
        ]
        MemoryRecord.objects.bulk_create(records)
        # The search index, as a save writes it (``memory.search``): every imported
        # memory is found at once.
        SearchDoc.objects.bulk_create(search.document(record) for record in records)

    def _promotions(self, batch: Sequence[Numbered]) -> None:
        agent = self._agent_row
        items = _typed(batch, PromotionLine)
        self._memories_known(items)
        repeat = _first_repeat(items, lambda line: line.memory_id)
        if repeat is None:
            ids = [line.memory_id for _number, line in items]
            done = set(Promotion.objects.filter(pk__in=ids).values_list("pk", flat=True))
            repeat = next((n for n, line in items if line.memory_id in done), None)
        if repeat is not None:
            raise InvalidBundle(repeat, "a second promotion of the same memory")
        self._one_holder_per_address(items)
        self._holders_known(items)
        users = self._users(line.decided_by for _number, line in items)
        held = self._instructions_the_system_approved(items, users)
        rows = []
        for _number, line in items:
            row = Promotion(
                **_row_fields(line, agent, users),
                status=line.status,
                corroborates_id=line.corroborates,
            )
            if line.memory_id in held:
                # The rule of SPEC §19.4, applied again: the system never approves a
                # memory that reads as an instruction, whatever a file says it did.
                row.status, row.reason, row.decided_at = "pending", INSTRUCTION_SHAPED, None
                row.decided_by_id = None
                self.held_rows.append((line.memory_id, line.section))
            rows.append(row)
        Promotion.objects.bulk_create(rows)
        self.held += len(held)

    def _instructions_the_system_approved(
        self, items: Sequence[tuple[int, PromotionLine]], users: dict[str, int | None]
    ) -> set[str]:
        """The memories of ``items`` whose line says approved with no person of this
        team as decider (the system approved them: an auto section, sightings, or a save
        before the screen existed; or the file names someone who is no member here, so
        the row would name nobody) and whose content reads as an instruction to the
        model. Their content is read back (one query, none when no line qualifies) and
        screened."""
        unnamed = [
            line.memory_id
            for _number, line in items
            if line.status == "approved" and not (line.decided_by and users.get(line.decided_by))
        ]
        if not unnamed:
            return set()
        contents = MemoryRecord.objects.filter(pk__in=unnamed).values_list("pk", "content")
        return {pk for pk, content in contents if not system_may_approve(screen(content))}

    def _holders_known(self, items: Sequence[tuple[int, PromotionLine]]) -> None:
        """A sighting's holder is a memory of this agent on an earlier line (one query,
        none when no line is a sighting)."""
        wanted = {line.corroborates for _number, line in items if line.corroborates}
        if not wanted:
            return
        found = set(
            MemoryRecord.objects.filter(agent=self._agent_row, pk__in=wanted).values_list(
                "pk", flat=True
            )
        )
        for number, line in items:
            if line.corroborates is not None and line.corroborates not in found:
                raise InvalidBundle(
                    number, f"it corroborates {line.corroborates}, which is not a memory"
                )

    def _migrated_promotions(self, batch: Sequence[Numbered]) -> None:
        agent = self._agent_row
        items = _typed(batch, MigratedPromotionLine)
        self._memories_known(items)
        users = self._users(line.decided_by for _number, line in items)
        MigratedPromotion.objects.bulk_create(
            MigratedPromotion(
                **_row_fields(line, agent, users),
                status="migrated",
                previous_status=line.previous_status,
                migrated_at=line.migrated_at,
                migrated_by=line.migrated_by,
                new_section=line.new_section,
                new_key=line.new_key,
            )
            for _number, line in items
        )

    def _one_holder_per_address(self, items: Sequence[tuple[int, PromotionLine]]) -> None:
        """At most one pending or approved promotion holds an address (SPEC §5.1): a
        bundle with two would fail on the database's constraint, without a line."""
        holding = [
            (number, line)
            for number, line in items
            if line.status in HOLDING and line.placement_key is not None
        ]
        repeat = _first_repeat(holding, lambda line: line.placement_key)
        if repeat is None:
            held = set(
                Promotion.objects.filter(
                    agent=self._agent_row,
                    status__in=HOLDING,
                    placement_key__in=[line.placement_key for _number, line in holding],
                ).values_list("placement_key", flat=True)
            )
            repeat = next((n for n, line in holding if line.placement_key in held), None)
        if repeat is not None:
            raise InvalidBundle(
                repeat, "another pending or approved promotion already holds this address"
            )

    def _held_events(self, agent: Agent) -> None:
        """A ``queued`` event, now, for each memory held back by the screen: the file's
        events say what happened where it came from; from the import on, its history
        says it waits, so as of any later moment (and what-if's replay) it is pending
        as its row is."""
        if not self.held_rows:
            return
        now = timezone.now()
        MemoryEvent.objects.bulk_create(
            new_event(
                memory_id,
                agent.pk,
                EventKind.QUEUED,
                SYSTEM,
                now,
                section=section,
                reason=INSTRUCTION_SHAPED,
                via=Via.IMPORT.value,
            )
            for memory_id, section in self.held_rows
        )

    def _events(self, batch: Sequence[Numbered]) -> None:
        agent = self._agent_row
        items = _typed(batch, EventLine)
        self._memories_known(items)
        users = self._users(line.user for _number, line in items)
        # Written directly: ``memory.events.write_events`` would append each to the
        # audit log as a change made now.
        MemoryEvent.objects.bulk_create(
            MemoryEvent(
                record_id=line.memory_id,
                agent=agent,
                kind=line.kind,
                actor=line.actor,
                actor_user_id=users.get(line.user) if line.user else None,
                detail=line.detail,
                at=line.at,
            )
            for _number, line in items
        )

    def _compositions(self, batch: Sequence[Numbered]) -> None:
        agent = self._agent_row
        items = _typed(batch, CompositionLine)
        repeat = _first_repeat(items, lambda line: line.digest)
        if repeat is None:
            stored = set(
                StoredComposition.objects.filter(
                    agent=agent, digest__in=[line.digest for _number, line in items]
                ).values_list("digest", flat=True)
            )
            repeat = next((n for n, line in items if line.digest in stored), None)
        if repeat is not None:
            raise InvalidBundle(repeat, "a second composition with the same digest")
        StoredComposition.objects.bulk_create(
            StoredComposition(
                agent=agent,
                digest=line.digest,
                body=packed(line.text),
                prompt_sha256=line.prompt_sha256,
                chars=line.chars,
                tokens=line.tokens,
                sections=line.sections,
                entries=line.entries,
                memory_ids=" ".join(line.memory_ids),
                created_at=line.created_at,
                redacted_at=line.redacted_at,
            )
            for _number, line in items
        )
        pks = self._compositions_by_digest([line.digest for _number, line in items])
        CompositionMemory.objects.bulk_create(
            (
                CompositionMemory(composition_id=pks[line.digest], memory_id=memory_id)
                for _number, line in items
                for memory_id in line.memory_ids
            ),
            batch_size=BATCH_LINES,
        )

    def _deliveries(self, batch: Sequence[Numbered]) -> None:
        agent = self._agent_row
        items = _typed(batch, DeliveryLine)
        self._ids_free(items, Delivery, "delivery")
        sizes = self._composition_sizes([line.composition for _number, line in items])
        for number, line in items:
            if line.composition not in sizes:
                raise InvalidBundle(
                    number, f"its composition {line.composition} is not on an earlier line"
                )
            _pk, tokens, chars = sizes[line.composition]
            if line.cache is not None and (
                line.cache.prefix_tokens > tokens or line.cache.prefix_chars > chars
            ):
                raise InvalidBundle(number, "its cached prefix is longer than its prompt")
        # Who asked (a token of the source instance) is not carried: tokens are not.
        Delivery.objects.bulk_create(
            Delivery(
                id=line.id,
                agent=agent,
                composition_id=sizes[line.composition][0],
                delivered_at=line.delivered_at,
                session=line.session,
                model=line.model,
                revision=line.revision,
                **_cache_columns(line.cache),
            )
            for _number, line in items
        )

    # --- checks and lookups ------------------------------------------------------------

    def _ids_free(
        self,
        items: Sequence[tuple[int, MemoryLine | DeliveryLine]],
        model: type[MemoryRecord] | type[Delivery],
        what: str,
    ) -> None:
        """Ids are this instance's primary keys: each must be new here, and once in the
        bundle."""
        repeat = _first_repeat(items, lambda line: line.id)
        if repeat is not None:
            raise InvalidBundle(repeat, f"a second {what} with the same id")
        ids = [line.id for _number, line in items]
        taken = dict(model.objects.filter(pk__in=ids).values_list("pk", "agent_id"))
        for number, line in items:
            if line.id in taken:
                if taken[line.id] == self._agent_row.pk:
                    raise InvalidBundle(number, f"a second {what} with the same id")
                raise BundleConflict(number, f"{what} {line.id} already exists in this instance")

    def _memories_known(
        self, items: Sequence[tuple[int, PromotionLine | MigratedPromotionLine | EventLine]]
    ) -> None:
        ids = {line.memory_id for _number, line in items}
        found = set(
            MemoryRecord.objects.filter(agent=self._agent_row, pk__in=ids).values_list(
                "pk", flat=True
            )
        )
        for number, line in items:
            if line.memory_id not in found:
                raise InvalidBundle(
                    number, f"memory {line.memory_id} is not a memory on an earlier line"
                )

    def _composition_sizes(self, digests: Sequence[str]) -> dict[str, tuple[int, int, int]]:
        """(pk, tokens, chars) of this agent's stored compositions, by digest."""
        rows = StoredComposition.objects.filter(
            agent=self._agent_row, digest__in=set(digests)
        ).values_list("digest", "pk", "tokens", "chars")
        return {digest: (pk, tokens, chars) for digest, pk, tokens, chars in rows}

    def _compositions_by_digest(self, digests: Sequence[str]) -> dict[str, int]:
        return dict(
            StoredComposition.objects.filter(
                agent=self._agent_row, digest__in=set(digests)
            ).values_list("digest", "pk")
        )

    def _users(self, names: Iterable[str | None]) -> dict[str, int | None]:
        """Users of this instance by username, for who decided and who acted: a member
        of the team with that username, or None (the actor's label is kept either way)."""
        missing = {name for name in names if name and name not in self.users}
        if missing:
            user_model = get_user_model()
            found = dict(
                user_model.objects.filter(
                    **{f"{user_model.USERNAME_FIELD}__in": missing},
                    memberships__team=self.team,
                ).values_list(user_model.USERNAME_FIELD, "pk")
            )
            for name in missing:
                self.users[name] = found.get(name)
        return self.users

    def _declarations_revision(self, agent: Agent, config: AgentConfig) -> tuple[int, str, bool]:
        """The agent's newest revision number and its config's hash, once its
        declarations are a revision: they are the newest revision's config in any
        bundle this product writes; otherwise (none at all, or rows edited by hand) they
        become the next revision, ``via`` import, written as every change's revision is
        (``record_revision``: under the agent's lock, with its summary, marking anything
        waiting stale). The import's own ``agent.created`` event names it, so recording
        appends none."""
        revision = record_revision(agent, self.actor, Via.IMPORT, config=config, audit=False)
        if revision is not None:
            return revision.number, revision.config_id, True
        # The declarations are the newest revision's config (written from the bundle).
        newest = revisions_of(agent).values_list("number", "config_id").first()
        assert newest is not None
        return newest[0], newest[1], False


def _row_fields(
    line: PromotionLine | MigratedPromotionLine, agent: Agent, users: dict[str, int | None]
) -> dict[str, Any]:
    """The columns a promotion row and a migrated one share, as the line gives them."""
    return {
        "record_id": line.memory_id,
        "agent": agent,
        "section": line.section,
        "key": line.key,
        "placement_key": line.placement_key,
        "key_source": line.key_source,
        "spec_key": line.spec_key,
        "spec_version": line.spec_version,
        "tier": line.tier,
        "reason": line.reason,
        "promoted_at": line.promoted_at,
        "decided_by_id": users.get(line.decided_by) if line.decided_by else None,
        "decided_at": line.decided_at,
        "decision_note": line.decision_note,
    }
