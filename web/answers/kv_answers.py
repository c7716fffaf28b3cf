"""The key/value store's shapes: a value, a written version, a page of keys, a key's
history, a deletion and the bootstrap read, with the input they are asked with. As
``/api/kv`` and ``/api/bootstrap`` answer, and the MCP tools ``kv_store`` and
``kv_bootstrap`` with them."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr

from kvstore import store
from lens.models import Team
from web.api.params import INT_MAX


class Page(BaseModel):
    limit: int = Field(50, ge=1, le=200)
    offset: int = Field(0, ge=0, le=INT_MAX)


class ReadParams(BaseModel):
    version: int | None = Field(None, ge=1, le=INT_MAX)


def asked_version(values: list[str]) -> int | None | Literal[False]:
    """``?version=N`` as ``ReadParams`` takes it when it is plainly a valid number; None
    when absent; False for anything else (left to the operation to refuse or accept)."""
    if not values:
        return None
    text = values[-1]
    if not (text.isascii() and text.isdigit()):
        return False
    number = int(text)
    return number if 1 <= number <= INT_MAX and len(values) == 1 else False


class WriteIn(BaseModel):
    # An unknown field is a client's mistake (a misspelt ``if_version`` would silently
    # drop the compare-and-swap), so it is refused, as the memory body refuses it.
    model_config = ConfigDict(extra="forbid")

    payload: StrictStr
    if_version: StrictInt | None = Field(None, ge=0, le=INT_MAX)


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


def _next(offset: int, limit: int, total: int) -> int | None:
    return offset + limit if offset + limit < total else None


def key_list(team: Team, prefix: str, page: Page) -> KeyList:
    """A page of keys as the API answers it (the MCP ``kv_store list`` too)."""
    found = store.list_keys(team, prefix, page.limit, page.offset)
    return KeyList(
        keys=[
            KeyOut(id=k.key, version=k.version, written_at=k.written_at, runes=k.runes)
            for k in found.keys
        ],
        total=found.total,
        limit=page.limit,
        offset=page.offset,
        next_offset=_next(page.offset, page.limit, found.total),
    )


def history_out(team: Team, key: str, page: Page) -> HistoryOut:
    found = store.history(team, key, page.limit, page.offset)
    return HistoryOut(
        id=found.key,
        versions=[VersionMeta.model_validate(v, from_attributes=True) for v in found.versions],
        total_versions=found.total_versions,
        limit=page.limit,
        offset=page.offset,
        next_offset=_next(page.offset, page.limit, found.total_versions),
    )


def value_out(key: str, found: store.Value) -> ValueOut:
    return ValueOut(
        id=key,
        version=found.version,
        written_at=found.written_at,
        runes=found.runes,
        payload=found.payload,
    )


def written_out(key: str, written: store.Written) -> KeyOut:
    return KeyOut(
        id=key, version=written.version, written_at=written.written_at, runes=written.runes
    )


class FullOut(BaseModel):
    id: str
    version: int
    payload: str
    runes: int


class PointerOut(BaseModel):
    id: str
    version: int
    runes: int
    first_line: str


class BootstrapOut(BaseModel):
    root: FullOut
    must: list[FullOut]
    ref: list[PointerOut]
    omitted: list[str] = Field(description="must keys left out, in key order")
    budget: int
    used: int
