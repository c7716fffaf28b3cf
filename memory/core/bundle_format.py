"""A portable bundle's file (SPEC §15): gzip-compressed JSON Lines, a manifest first.
Pure: writing lines into a compressed body, and reading a file back line by line with
every check an import relies on.

The file, once decompressed, is UTF-8 text of lines each ending in ``\\n``:

- line 1, the manifest: ``{"format": "composition-lens-bundle", "version": 1, "agent",
  "exported_at", "counts": {type: lines}, "sha256"}``;
- lines 2 to n, one JSON object each, with a ``"type"`` (``memory.core.bundle_lines``),
  in the order of ``TYPES``.

``sha256`` is the hex SHA-256 of the bytes of lines 2 to n, each with its ``\\n``, in
order: of everything that follows the manifest's line break. Reading checks it, the
counts and the gzip stream's own CRC, so a bundle that was cut short, altered or
mixed up is refused before anything is written, naming the line where it went wrong.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import IO, Any, Literal

from pydantic import BaseModel, ConfigDict, StrictInt, StrictStr, ValidationError

from lens.core import nesting
from lens.core.errors import DomainError
from lens.core.text import unstorable_path
from memory.core import gzip_splice
from memory.core.bundle_lines import (
    SCHEMAS,
    TYPES,
    AgentLine,
    DeliveryLine,
    Line,
    RevisionLine,
    Sha256,
)

FORMAT = "composition-lens-bundle"
VERSION = 1
# zlib's default: a bundle is written once and kept; level 1 would be about a third
# larger for a little less time.
LEVEL = 6
# The longest line a reader takes (a stored composition is the longest kind, a few
# hundred kilobytes for a large agent); longer is refused, not read into memory.
MAX_LINE_BYTES = 64 * 1024 * 1024


class InvalidBundle(DomainError):
    """A bundle that cannot be imported as it is: cut short, altered, of another format
    or version, or with a line that does not read. The message starts with the line."""

    code = "invalid_bundle"

    def __init__(self, line: int, problem: str) -> None:
        super().__init__(f"line {line}: {problem}", line=line)


def encode_line(data: Mapping[str, Any]) -> bytes:
    """One line: compact JSON, UTF-8 as it is (no ``\\u`` escapes), and ``\\n``. JSON
    escapes every control character inside strings, so the ``\\n`` is the only one.

    The line's own fields stay in the order given (``type`` first, for a reader); every
    object inside has its keys sorted, so a line does not depend on the database it was
    read from (PostgreSQL's jsonb keeps an object's keys in an order of its own)."""
    fields = ",".join(f"{_compact(name)}:{_compact(value)}" for name, value in data.items())
    return ("{" + fields + "}\n").encode("utf-8")


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


# --- writing --------------------------------------------------------------------------


@dataclass(frozen=True)
class Body:
    """Lines 2 to n once written: their hash, how many of each type, and what the
    gzip trailer needs (their CRC-32 and length)."""

    sha256: str
    counts: dict[str, int]
    crc: int
    size: int


class BodyWriter:
    """Lines 2 to n, compressed into ``sink`` as they come (nothing is kept), hashed
    and counted. ``finish`` ends the compressed stream."""

    def __init__(self, sink: IO[bytes], level: int = LEVEL) -> None:
        self._sink = sink
        self._deflater = gzip_splice.Deflater(level)
        self._hash = hashlib.sha256()
        self._counts = dict.fromkeys(TYPES, 0)

    def write(self, line: Mapping[str, Any]) -> None:
        data = encode_line(line)
        self._counts[line["type"]] += 1
        self._hash.update(data)
        self._sink.write(self._deflater.compress(data))

    def finish(self) -> Body:
        self._sink.write(self._deflater.finish())
        return Body(
            sha256=self._hash.hexdigest(),
            counts=dict(self._counts),
            crc=self._deflater.crc,
            size=self._deflater.size,
        )


def manifest(agent: str, exported_at: str, body: Body) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "version": VERSION,
        "agent": agent,
        "exported_at": exported_at,
        "counts": body.counts,
        "sha256": body.sha256,
    }


def framing(manifest_data: Mapping[str, Any], body: Body) -> tuple[bytes, bytes]:
    """The bytes before the compressed body (gzip header and the manifest line) and
    after it (the gzip trailer): head + body + tail is the bundle file."""
    line = encode_line(manifest_data)
    head, crc = gzip_splice.head(line, LEVEL)
    whole = gzip_splice.crc32_combine(crc, body.crc, body.size)
    return head, gzip_splice.trailer(whole, len(line) + body.size)


# --- reading --------------------------------------------------------------------------


class Manifest(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal["composition-lens-bundle"]
    version: Literal[1]
    agent: StrictStr
    exported_at: StrictStr
    counts: dict[StrictStr, StrictInt]
    sha256: Sha256


@dataclass(frozen=True)
class Numbered:
    """A line as read: its number in the file (the manifest is 1), its size in bytes
    and what it holds."""

    number: int
    size: int
    line: Line


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


class BundleReader:
    """Reads a bundle from a binary stream: ``manifest`` first (line 1), then each line
    in turn (``lines()``), and checks, once the last is read, that there were as many
    of each type as the manifest counts and that they hash to its ``sha256``. Every
    problem is an ``InvalidBundle`` naming its line. Memory holds one line at a time.
    """

    def __init__(self, stream: IO[bytes]) -> None:
        self._file = gzip.GzipFile(fileobj=stream, mode="rb")
        self._number = 0
        first = self._next()
        if first is None:
            raise InvalidBundle(1, "the file is empty: there is no manifest")
        self.manifest = _read_manifest(first)

    def _next(self) -> bytes | None:
        """The next line with its ``\\n``, or None at the end of the file."""
        self._number += 1
        try:
            raw = self._file.readline(MAX_LINE_BYTES + 1)
        except EOFError:
            raise InvalidBundle(
                self._number, "the file ends in the middle of its compressed data: it was cut short"
            ) from None
        except (gzip.BadGzipFile, zlib.error, OSError) as exc:
            raise InvalidBundle(self._number, f"the file is not intact gzip data ({exc})") from None
        if not raw:
            return None
        if len(raw) > MAX_LINE_BYTES:
            raise InvalidBundle(self._number, f"the line is longer than {MAX_LINE_BYTES} bytes")
        if not raw.endswith(b"\n"):
            raise InvalidBundle(self._number, "the last line has no line break: it was cut short")
        return raw

    def lines(self) -> Iterator[Numbered]:
        """Lines 2 to n, each parsed and validated, in the order ``TYPES`` sets; the
        whole bundle is checked once the last one is read."""
        counts = self.manifest.counts
        found = dict.fromkeys(TYPES, 0)
        digest = hashlib.sha256()
        order = 0  # the index in TYPES of the type read last
        checks = _Sequence()
        while (raw := self._next()) is not None:
            number = self._number
            digest.update(raw)
            line = _parse(number, raw)
            kind = line.type
            if TYPES.index(kind) < order:
                raise InvalidBundle(
                    number,
                    f"{_a(kind)} {kind} line after the {TYPES[order]} lines: lines come in the "
                    f"order {', '.join(TYPES)}",
                )
            order = TYPES.index(kind)
            found[kind] += 1
            if found[kind] > counts.get(kind, 0):
                raise InvalidBundle(
                    number,
                    f"more {kind} lines than the manifest counts ({counts.get(kind, 0)})",
                )
            checks.check(number, line)
            yield Numbered(number, len(raw), line)
        end = self._number
        for name in TYPES:
            if found[name] < counts.get(name, 0):
                raise InvalidBundle(
                    end,
                    f"the file ends here, with {found[name]} of the {counts[name]} {name} "
                    "lines its manifest counts: it was cut short",
                )
        if digest.hexdigest() != self.manifest.sha256:
            raise InvalidBundle(
                1,
                f"lines 2 to {end - 1} hash to {digest.hexdigest()}, not to the manifest's "
                f"sha256 {self.manifest.sha256}: the bundle was altered",
            )

    def close(self) -> None:
        self._file.close()


def _load(number: int, raw: bytes) -> Any:
    try:
        return nesting.loads(raw, parse_constant=_reject_constant)
    except UnicodeDecodeError:
        raise InvalidBundle(number, "the line is not UTF-8 text") from None
    except nesting.TooDeep as exc:
        raise InvalidBundle(number, f"the line {exc}") from None
    except json.JSONDecodeError as exc:
        raise InvalidBundle(
            number, f"the line is not valid JSON ({exc.msg} at column {exc.colno})"
        ) from None
    except ValueError as exc:
        raise InvalidBundle(number, f"the line is not valid JSON ({exc})") from None


def _read_manifest(raw: bytes) -> Manifest:
    data = _load(1, raw)
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        found = data.get("format") if isinstance(data, dict) else None
        named = f" (its format is {found!r})" if isinstance(found, str) else ""
        raise InvalidBundle(1, f"this is not a {FORMAT} file{named}")
    if data.get("version") != VERSION:
        raise InvalidBundle(
            1,
            f"bundle version {data.get('version')!r} is not supported: this reads version {VERSION}",
        )
    try:
        found_manifest = Manifest.model_validate(data)
    except ValidationError as exc:
        raise InvalidBundle(1, f"the manifest does not read: {_first_problem(exc)}") from None
    unknown = sorted(set(found_manifest.counts) - set(TYPES))
    if unknown:
        raise InvalidBundle(1, f"the manifest counts lines of an unknown type {unknown[0]!r}")
    if found_manifest.counts.get("agent") != 1:
        raise InvalidBundle(1, "the manifest must count exactly one agent line")
    if any(count < 0 for count in found_manifest.counts.values()):
        raise InvalidBundle(1, "the manifest counts a negative number of lines")
    return found_manifest


def _parse(number: int, raw: bytes) -> Line:
    data = _load(number, raw)
    if not isinstance(data, dict):
        raise InvalidBundle(number, "the line is not a JSON object")
    kind = data.get("type")
    if not isinstance(kind, str) or kind not in SCHEMAS:
        raise InvalidBundle(number, f"unknown line type {kind!r}")
    schema = SCHEMAS[kind]
    if (found := unstorable_path(data)) is not None:
        where, why = found
        raise InvalidBundle(number, f"{'.'.join(str(p) for p in where)}: {why}")
    try:
        line: Line = schema.model_validate(data)  # type: ignore[assignment]  # one of Line
    except ValidationError as exc:
        raise InvalidBundle(
            number, f"{_a(kind)} {kind} line that does not read: {_first_problem(exc)}"
        ) from None
    return line


def _a(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"


def _first_problem(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error.get("loc", ()))
    message = str(error["msg"]).removeprefix("Value error, ")
    return f"{where}: {message}" if where else message


class _Sequence:
    """What must hold from one line to the next: one agent line, first; revisions
    numbered 1, 2, … without gaps; delivery times strictly increasing (one agent's
    deliveries never share a time); deliveries naming revisions that the bundle holds."""

    def __init__(self) -> None:
        self.revisions = 0
        self.delivered_at: datetime | None = None

    def check(self, number: int, line: Line) -> None:
        if isinstance(line, AgentLine) and number != 2:
            raise InvalidBundle(number, "the agent line must be line 2")
        if isinstance(line, RevisionLine):
            if line.revision != self.revisions + 1:
                raise InvalidBundle(
                    number,
                    f"revision {line.revision} follows revision {self.revisions}: revisions "
                    "are numbered 1, 2, … without gaps",
                )
            self.revisions = line.revision
        elif isinstance(line, DeliveryLine):
            if self.delivered_at is not None and line.delivered_at <= self.delivered_at:
                raise InvalidBundle(
                    number, "deliveries come in the order they were made, each at its own time"
                )
            self.delivered_at = line.delivered_at
            if line.revision is not None and line.revision > self.revisions:
                raise InvalidBundle(
                    number, f"the delivery names revision {line.revision}, which the bundle lacks"
                )


_PLURALS = {
    "memory": "memories",
    "delivery": "deliveries",
    "audit": "audit events",
    "routing_case": "routing cases",
    "migrated_promotion": "migrated promotions",
}


def counts_in_words(counts: Mapping[str, int]) -> str:
    """``1 agent, 3 revisions, 12 memories, …``: every type, in order."""
    words = []
    for kind in TYPES:
        count = counts.get(kind, 0)
        name = {
            "audit": "audit event",
            "routing_case": "routing case",
            "migrated_promotion": "migrated promotion",
        }.get(kind, kind)
        words.append(f"{count:,} {name if count == 1 else _PLURALS.get(kind, kind + 's')}")
    return ", ".join(words)
