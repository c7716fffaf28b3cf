"""The key/value store's API: chosen keys, every version kept, CAS, metadata history."""

from __future__ import annotations

from datetime import datetime

from django.http import HttpRequest
from ninja import Query, Router, Status
from pydantic import BaseModel, Field, StrictInt, StrictStr

from kvstore import store
from kvstore.keys import unified_diff
from lens.apiauth import team_of
from lens.apierrors import ApiError

router = Router(tags=["key/value store"])

# Versions are PositiveIntegerFields; a larger number (or offset) in a query would
# overflow the database's integer instead of finding nothing, so it is refused as invalid.
INT_MAX = 2**31 - 1


class Page(BaseModel):
    limit: int = Field(50, ge=1, le=200)
    offset: int = Field(0, ge=0, le=INT_MAX)


class ListParams(Page):
    prefix: str = ""


class KeyOut(BaseModel):
    id: str
    version: int
    written_at: datetime
    runes: int


class KeyList(BaseModel):
    keys: list[KeyOut]
    total: int
    limit: int
    offset: int
    next_offset: int | None


class ValueOut(KeyOut):
    payload: str


class WriteIn(BaseModel):
    payload: StrictStr
    if_version: StrictInt | None = Field(None, ge=0)


class VersionMeta(BaseModel):
    version: int
    written_at: datetime
    runes: int
    first_line: str


class HistoryOut(BaseModel):
    id: str
    versions: list[VersionMeta]
    total_versions: int
    limit: int
    offset: int
    next_offset: int | None


class DeletedOut(BaseModel):
    id: str
    deleted_versions: int


class ReadParams(BaseModel):
    version: int | None = Field(None, ge=1, le=INT_MAX)


class DiffParams(BaseModel):
    from_: int = Field(alias="from", ge=1, le=INT_MAX)
    to: int = Field(ge=1, le=INT_MAX)


class DiffOut(BaseModel):
    id: str
    from_: int = Field(serialization_alias="from")
    to: int
    diff: str


def _fail(error: store.StoreError) -> ApiError:
    return ApiError(error.status, error.code, error.message, **error.details)


def _next(offset: int, limit: int, total: int) -> int | None:
    return offset + limit if offset + limit < total else None


@router.get("", response=KeyList)
def list_keys(request: HttpRequest, params: Query[ListParams]) -> KeyList:
    """Keys by plain string prefix (end it with '.' for a namespace), in code-point order."""
    rows = store.keys_with_prefix(team_of(request), params.prefix)
    total = rows.count()
    page = rows.values_list("key", "latest_version", "latest_written_at", "latest_runes")[
        params.offset : params.offset + params.limit
    ]
    return KeyList(
        keys=[KeyOut(id=k, version=v, written_at=w, runes=r) for k, v, w, r in page],
        total=total,
        limit=params.limit,
        offset=params.offset,
        next_offset=_next(params.offset, params.limit, total),
    )


# Routes with a suffix come before the bare key: a key may itself contain any segment.
@router.get("/{path:key}/history", response=HistoryOut)
def key_history(request: HttpRequest, key: str, params: Query[Page]) -> HistoryOut:
    """Version metadata, newest first; never payloads."""
    try:
        row, versions = store.history(team_of(request), key, params.limit, params.offset)
    except store.StoreError as exc:
        raise _fail(exc) from None
    # Versions are 1..latest with no gaps: writes append, nothing prunes, and delete
    # removes the key with every version. So the count needs no scan.
    total = row.latest_version
    return HistoryOut(
        id=row.key,
        versions=[VersionMeta(**v) for v in versions],
        total_versions=total,
        limit=params.limit,
        offset=params.offset,
        next_offset=_next(params.offset, params.limit, total),
    )


@router.get("/{path:key}/diff", response=DiffOut, by_alias=True)
def key_diff(request: HttpRequest, key: str, params: Query[DiffParams]) -> DiffOut:
    """A unified diff from one version to another."""
    try:
        old, new = store.diff(team_of(request), key, params.from_, params.to)
    except store.StoreError as exc:
        raise _fail(exc) from None
    text = unified_diff(old.payload, new.payload, f"{key}@{old.version}", f"{key}@{new.version}")
    return DiffOut(id=key, from_=old.version, to=new.version, diff=text)


@router.get("/{path:key}", response=ValueOut)
def read_key(request: HttpRequest, key: str, params: Query[ReadParams]) -> ValueOut:
    """The latest version, or ``?version=N``. A missing key is an error, never empty."""
    try:
        found = store.read(team_of(request), key, params.version)
    except store.StoreError as exc:
        raise _fail(exc) from None
    return ValueOut(
        id=key,
        version=found.version,
        written_at=found.written_at,
        runes=found.runes,
        payload=found.payload,
    )


@router.put("/{path:key}", response={200: KeyOut, 201: KeyOut})
def write_key(request: HttpRequest, key: str, body: WriteIn) -> Status[KeyOut]:
    """Append a version (201 for version 1). ``if_version``: compare-and-swap; 0 means
    "only if the key does not exist". Over-limit payloads are refused, never truncated.
    """
    try:
        written = store.write(team_of(request), key, body.payload, body.if_version)
    except store.StoreError as exc:
        raise _fail(exc) from None
    out = KeyOut(
        id=key, version=written.version, written_at=written.written_at, runes=written.runes
    )
    return Status(201 if written.version == 1 else 200, out)


@router.delete("/{path:key}", response=DeletedOut)
def delete_key(request: HttpRequest, key: str) -> DeletedOut:
    """Remove every version; a later write starts again at version 1."""
    try:
        count = store.delete(team_of(request), key)
    except store.StoreError as exc:
        raise _fail(exc) from None
    return DeletedOut(id=key, deleted_versions=count)
