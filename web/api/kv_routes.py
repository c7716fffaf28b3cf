"""The key/value store's API: chosen keys, every version kept, CAS, metadata history."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from django.http import HttpRequest
from ninja import Query, Router, Status
from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr

from kvstore import store
from kvstore.bootstrap import bootstrap
from kvstore.core.keys import key_problem
from lens.actors import Actor
from lens.api_tokens import find_token
from lens.models import ApiToken, Team
from web.api.auth import ApiRequest, TeamToken, team_of, token_of
from web.api.params import INT_MAX

router = Router(tags=["key/value store"])


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
    # An unknown field is a client's mistake (a misspelt ``if_version`` would silently
    # drop the compare-and-swap), so it is refused, as the memory body refuses it.
    model_config = ConfigDict(extra="forbid")

    payload: StrictStr
    if_version: StrictInt | None = Field(None, ge=0, le=INT_MAX)


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


def _next(offset: int, limit: int, total: int) -> int | None:
    return offset + limit if offset + limit < total else None


def key_list(team: Team, prefix: str, page: Page) -> KeyList:
    """A page of keys as this API answers it (the MCP ``kv_store list`` too)."""
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


@router.get("", response=KeyList)
def list_keys(request: ApiRequest, params: Query[ListParams]) -> KeyList:
    """Keys by plain string prefix (end it with '.' for a namespace), in code-point order."""
    return key_list(team_of(request), params.prefix, params)


# Routes with a suffix come before the bare key: a key may itself contain any segment.
@router.get("/{path:key}/history", response=HistoryOut)
def key_history(request: ApiRequest, key: str, params: Query[Page]) -> HistoryOut:
    """Version metadata, newest first; never payloads."""
    return history_out(team_of(request), key, params)


@router.get("/{path:key}/diff", response=DiffOut, by_alias=True)
def key_diff(request: ApiRequest, key: str, params: Query[DiffParams]) -> DiffOut:
    """A unified diff from one version to another."""
    found = store.diff(team_of(request), key, params.from_, params.to)
    return DiffOut(id=key, from_=found.old.version, to=found.new.version, diff=found.text)


def _token_with_read(request: HttpRequest, raw: str) -> ApiToken | None:
    """The token check of a read, with the read itself in the same statement (one round
    trip where there were two): the outcome waits on the request for ``read_key``. A
    request whose key or ``version`` would be refused has its token checked alone, and
    its refusal comes from the operation, as for any other route."""
    match = request.resolver_match
    key = str(match.kwargs.get("key", "")) if match is not None else ""
    version = asked_version(request.GET.getlist("version"))
    if key_problem(key) or version is False:
        return find_token(raw)
    found = store.read_as(raw, key, version)
    if found is None:
        return None
    setattr(request, _READ, found)
    return found.token


_READ = "kv_read_as"


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


@router.get("/{path:key}", response=ValueOut, auth=TeamToken(lookup=_token_with_read))
def read_key(request: ApiRequest, key: str, params: Query[ReadParams]) -> ValueOut:
    """The latest version, or ``?version=N``. A missing key is an error, never empty."""
    found = getattr(request, _READ, None)
    if isinstance(found, store.ReadAs) and found.key == key and found.version == params.version:
        return value_out(key, found.value())
    return value_out(key, store.read(team_of(request), key, params.version))


@router.put("/{path:key}", response={200: KeyOut, 201: KeyOut})
def write_key(request: ApiRequest, key: str, body: WriteIn) -> Status[KeyOut]:
    """Append a version (201 for version 1). ``if_version``: compare-and-swap; 0 means
    "only if the key does not exist". Over-limit payloads are refused, never truncated.
    """
    written = store.write(
        team_of(request), key, body.payload, body.if_version, Actor.for_token(token_of(request))
    )
    return Status(201 if written.version == 1 else 200, written_out(key, written))


@router.delete("/{path:key}", response=DeletedOut)
def delete_key(request: ApiRequest, key: str) -> DeletedOut:
    """Remove every version; a later write starts again at version 1."""
    return DeletedOut(
        id=key,
        deleted_versions=store.delete(team_of(request), key, Actor.for_token(token_of(request))),
    )


bootstrap_router = Router(tags=["key/value store"])


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


@bootstrap_router.get("", response=BootstrapOut)
def read_bootstrap(request: ApiRequest) -> dict[str, object]:
    """What a session reads first, in one call: ``root``; the ``must.*`` keys with their
    payloads, in key order, as many as fit 40,000 code points with ``root`` (each one
    that does not fit is named in ``omitted``: skip and continue); and ``ref.*``
    pointers (version, size, first line) whose payloads are never read. One consistent
    snapshot. A missing ``root`` is 404 ``key_not_found``.
    """
    return bootstrap(team_of(request)).answer()
