"""The key/value store's API: chosen keys, every version kept, CAS, metadata history."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Query, Router, Status
from pydantic import BaseModel, Field

from kvstore import store
from kvstore.bootstrap import bootstrap
from kvstore.core.keys import key_problem
from lens.actors import Actor
from lens.api_tokens import find_token
from lens.models import ApiToken
from web.answers.kv_answers import (
    BootstrapOut,
    DeletedOut,
    HistoryOut,
    KeyList,
    KeyOut,
    Page,
    ReadParams,
    ValueOut,
    WriteIn,
    asked_version,
    history_out,
    key_list,
    value_out,
    written_out,
)
from web.api.auth import ApiRequest, TeamToken, team_of, token_of
from web.api.params import INT_MAX

router = Router(tags=["key/value store"])


class ListParams(Page):
    prefix: str = ""


class DiffParams(BaseModel):
    from_: int = Field(alias="from", ge=1, le=INT_MAX)
    to: int = Field(ge=1, le=INT_MAX)


class DiffOut(BaseModel):
    id: str
    from_: int = Field(serialization_alias="from")
    to: int
    diff: str


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


@bootstrap_router.get("", response=BootstrapOut)
def read_bootstrap(request: ApiRequest) -> dict[str, object]:
    """What a session reads first, in one call: ``root``; the ``must.*`` keys with their
    payloads, in key order, as many as fit 40,000 code points with ``root`` (each one
    that does not fit is named in ``omitted``: skip and continue); and ``ref.*``
    pointers (version, size, first line) whose payloads are never read. One consistent
    snapshot. A missing ``root`` is 404 ``key_not_found``.
    """
    return bootstrap(team_of(request)).answer()
