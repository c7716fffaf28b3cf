"""What a bundle's own audit lines attest, checked against the lines they describe
(SPEC §15).

The manifest's hash only says that the lines are the ones it was computed over: anyone
who edits a line can compute it again. The audit lines are the source team's events as
its log sealed them, and they hold hashes of what the other lines carry: each
``memory.saved`` (and ``memory.erased``) event the ``content_sha256`` of its memory, each
``agent.created`` and ``agent.revised`` event the ``config_sha256`` of its revision. So
an import checks, as it reads:

- each audit event against its own ``sha256`` (``lens.audit.seal``, the function the log
  itself uses), and each event whose ``seq`` follows the one on the line before against
  that event's hash (``prev_sha256``); the first audit line, and any after a gap in
  ``seq`` (another agent's events of the same team sit there in the source's log),
  follows an event the bundle does not hold, so its ``prev_sha256`` is not checked;
- each memory's content (an erased memory: the ``content_sha256`` its tombstone keeps)
  against the hash its events sealed;
- each revision's ``config_sha256`` (which its line's config hashes to: the line's own
  check) against the hash its event sealed.

Audit lines come last, so the memories' and revisions' hashes are kept as they are read
(an id, a line number and 32 bytes a memory: a small fraction of the bundle, never a
line's content). A slug's events before an ``agent.deleted`` belong to an earlier agent
of that slug (its revision 1 is not this one's), so a mismatch found before the last
deletion is forgotten. A memory or revision without an event (one imported from another
bundle, whose events stayed in the source's log) has nothing to be checked against.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from lens.audit import seal
from memory.core.bundle_format import InvalidBundle, Numbered
from memory.core.bundle_lines import AuditLine, MemoryLine, RevisionLine

# The actions whose details seal a revision's config, and a memory's content.
_REVISION_ACTIONS = frozenset({"agent.created", "agent.revised"})
_MEMORY_ACTIONS = frozenset({"memory.saved", "memory.erased"})


@dataclass(frozen=True, slots=True)
class _Held:
    number: int  # the line that holds it
    digest: bytes  # the hash it carries, as 32 bytes


@dataclass(frozen=True)
class _Mismatch:
    number: int
    problem: str


def attested(lines: Iterable[Numbered]) -> Iterator[Numbered]:
    """The lines, each checked against what the bundle's audit lines attest; raises
    InvalidBundle naming the first line that disagrees. A mismatch of content and event
    is raised once every line is read (a later ``agent.deleted`` may show the event to
    be an earlier agent's), so a bundle that fails its manifest's hash says so first."""
    check = _Attestation()
    for numbered in lines:
        check.read(numbered)
        yield numbered
    check.finish()


class _Attestation:
    def __init__(self) -> None:
        self.memories: dict[str, _Held] = {}
        self.revisions: dict[int, _Held] = {}
        self.previous: tuple[int, int, str] | None = None  # line, seq, sha256
        self.mismatch: _Mismatch | None = None

    def read(self, numbered: Numbered) -> None:
        line = numbered.line
        if isinstance(line, MemoryLine):
            self._memory(numbered.number, line)
        elif isinstance(line, RevisionLine):
            self.revisions[line.revision] = _Held(
                numbered.number, bytes.fromhex(line.config_sha256)
            )
        elif isinstance(line, AuditLine):
            self._audit(numbered.number, line.event)

    def finish(self) -> None:
        if self.mismatch is not None:
            raise InvalidBundle(self.mismatch.number, self.mismatch.problem)

    def _memory(self, number: int, line: MemoryLine) -> None:
        if line.erased_at is not None:
            if line.content_sha256 is None:
                raise InvalidBundle(number, f"erased memory {line.id} has no content_sha256")
            digest = bytes.fromhex(line.content_sha256)
        else:
            digest = hashlib.sha256(line.content.encode()).digest()
            if line.content_sha256 is not None and bytes.fromhex(line.content_sha256) != digest:
                raise InvalidBundle(
                    number,
                    f"memory {line.id}: its content does not hash to its content_sha256: "
                    "it was altered",
                )
        self.memories[line.id] = _Held(number, digest)

    def _audit(self, number: int, event: dict[str, Any]) -> None:
        seq, sha = event["seq"], event["sha256"]
        if seal(event) != sha:
            raise InvalidBundle(
                number, "the audit event does not hash to its sha256: it was altered"
            )
        if self.previous is not None:
            before_number, before_seq, before_sha = self.previous
            if seq <= before_seq:
                raise InvalidBundle(
                    number,
                    f"audit event {seq} after event {before_seq} (line {before_number}): "
                    "events come in the order of their log",
                )
            if seq == before_seq + 1 and event["prev_sha256"] != before_sha:
                raise InvalidBundle(
                    number,
                    f"audit event {seq} does not follow event {before_seq} (line "
                    f"{before_number}): its prev_sha256 is not that event's sha256: the "
                    "chain was altered",
                )
        self.previous = (number, seq, sha)
        action, details = event["action"], event["details"]
        if action == "agent.deleted":
            # What came before was an earlier agent of this slug.
            self.mismatch = None
        elif action in _REVISION_ACTIONS:
            revision = details.get("revision")
            if isinstance(revision, int) and revision in self.revisions:
                self._compare(
                    self.revisions[revision],
                    details.get("config_sha256"),
                    f"revision {revision}: its config_sha256 is not the config_sha256 of its "
                    f"{action} audit event (seq {seq}, line {number}): it was altered",
                )
        elif action in _MEMORY_ACTIONS:
            memory_id = event["object"]["id"]
            if memory_id in self.memories:
                self._compare(
                    self.memories[memory_id],
                    details.get("content_sha256"),
                    f"memory {memory_id}: its content does not hash to the content_sha256 of "
                    f"its {action} audit event (seq {seq}, line {number}): it was altered",
                )

    def _compare(self, held: _Held, sealed: object, problem: str) -> None:
        if self.mismatch is not None or not isinstance(sealed, str):
            return
        try:
            matches = bytes.fromhex(sealed) == held.digest
        except ValueError:
            matches = False
        if not matches:
            self.mismatch = _Mismatch(held.number, problem)
