"""The deliveries API (SPEC §11): record a delivery, list them, read one, diff two."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any

from django.http import HttpResponse
from ninja import Body, Query, Router
from pydantic import BaseModel, BeforeValidator, Field

from lens.actors import Actor
from lens.agents import get_agent
from lens.context_windows import context_of
from lens.core.counts import Counts
from memory.composed import stamped_agent
from memory.core.composition import Composition
from memory.core.deliveries import DeliveryInput, label_problem
from memory.deliveries.cache_figures import figures_of
from memory.deliveries.ledger import (
    DeliveryDiff,
    composition_json,
    deliver,
    delivery_diff,
    delivery_page,
    find_delivery,
    memory_ids_of,
)
from memory.deliveries.reads import TokenAgent, token_with_agent
from memory.models import Delivery, StoredComposition
from web.api.auth import ApiRequest, TeamToken, team_of, token_of, with_agent_reads
from web.api.params import INT_MAX, iso_8601
from web.api.rendering import iso_utc
from web.costly import costly

agent_deliveries = Router(tags=["deliveries"])
deliveries = Router(tags=["deliveries"])


class FirstChangeOut(BaseModel):
    section: str = Field(description="The prompt section of this prompt that changed first")
    background_section: str | None = Field(
        description="The Background section's id, when the change is inside one"
    )


class CacheOut(BaseModel):
    """What a provider could serve from its prompt cache (SPEC §17), against the agent's
    previous delivery."""

    prefix_tokens: int = Field(description="Leading o200k_base tokens shared with it")
    prefix_chars: int = Field(description="Leading code points shared with it")
    total_tokens: int = Field(description="Tokens of the whole prompt")
    first_change: FirstChangeOut | None = Field(
        description="Where this prompt first differs (null: identical, or the first)"
    )


class ContextOut(BaseModel):
    """The prompt's tokens against the context window of the delivery's model, or of
    the model its agent declares when the delivery named none."""

    model: str | None = Field(description="The model whose window it is measured against")
    window: int | None = Field(description="Its context window in tokens (null: not known)")
    share: float | None = Field(description="The prompt's share of the window")
    level: str | None = Field(
        description='"ok", "warning" from 50%, "alarm" from 90%; null when the window is not known'
    )


def _context(delivery: Delivery, tokens: int, declared: str | None) -> dict[str, Any]:
    return context_of(tokens, delivery.model or declared).as_json()


def _cache(delivery: Delivery) -> dict[str, Any] | None:
    # Null for a delivery recorded before the figures were kept.
    figures = figures_of(delivery)
    return None if figures is None else figures.as_json()


class DeliveredOut(BaseModel):
    delivery_id: str
    delivered_at: datetime
    session: str | None
    model: str | None
    revision: int | None  # the agent's revision it was composed from (SPEC §14)
    prompt_sha256: str
    # Present (true) once a memory of it was erased (SPEC §15): its lines read
    # "[erased]", and ``prompt_sha256`` is still the hash of the prompt as delivered.
    redacted: bool = False
    cache: CacheOut | None
    context: ContextOut
    composition: Composition


class DeliveryOut(DeliveredOut):
    agent: str


def _answer(delivery: Delivery, composition: str, status: int, **extra: str) -> HttpResponse:
    """The delivery with its composition spliced in as the exact stored JSON text: what
    the runtime reads is byte for byte what was recorded (and it is not encoded twice).
    """
    head: dict[str, Any] = {
        "delivery_id": delivery.id,
        **extra,
        "delivered_at": iso_utc(delivery.delivered_at),
        "session": delivery.session,
        "model": delivery.model,
        "revision": delivery.revision,
        "prompt_sha256": delivery.composition.prompt_sha256,
    }
    if delivery.composition.redacted_at is not None:
        head["redacted"] = True
    head["cache"] = _cache(delivery)
    head["context"] = _context(delivery, delivery.composition.tokens, delivery.agent.model)
    body = json.dumps(head, ensure_ascii=False)[:-1] + ',"composition":' + composition + "}"
    return HttpResponse(body.encode("utf-8"), status=status, content_type="application/json")


_DELIVERY_READS = "delivery_reads"


# A delivery's token check, with its agent, the agent's stamp and its revision number in
# the same statement (one round trip where there were two): they wait on the request for
# ``record_delivery``.
_token_with_agent = with_agent_reads(token_with_agent, _DELIVERY_READS)


@agent_deliveries.post(
    "/{slug}/deliveries", response={201: DeliveredOut}, auth=TeamToken(lookup=_token_with_agent)
)
def record_delivery(
    request: ApiRequest, slug: str, payload: Annotated[DeliveryInput | None, Body()] = None
) -> HttpResponse:
    """What an agent runtime calls when it starts a session: the composed prompt, recorded
    as delivered in the same transaction. ``session`` and ``model`` (each 1–128
    characters, one line) say which session and model it was for.
    """
    # The agent's row, stamp and revision number: its declarations are read only when the
    # composition kept for that stamp is not there (``memory.composed``).
    found = getattr(request, _DELIVERY_READS, None)
    if isinstance(found, TokenAgent) and found.agent is not None and found.agent.slug == slug:
        agent = found.agent
    else:
        # No such agent: ``get_agent`` refuses it as every route does.
        agent = stamped_agent(team_of(request), slug, revision=True)
    delivered = deliver(agent, Actor.for_token(token_of(request)), payload)
    return _answer(delivered.delivery, delivered.composition_json, 201)


def _label(value: Any) -> Any:
    if isinstance(value, str) and (problem := label_problem(value)) is not None:
        raise ValueError(problem)
    return value


class ListParams(BaseModel):
    session: Annotated[str | None, BeforeValidator(_label)] = None
    memory: Annotated[str | None, BeforeValidator(_label)] = None
    before: Annotated[datetime | None, BeforeValidator(iso_8601)] = None
    limit: int = Field(50, ge=1, le=200)
    offset: int = Field(0, ge=0, le=INT_MAX)


class DeliverySummary(BaseModel):
    delivery_id: str
    delivered_at: datetime
    session: str | None
    model: str | None
    revision: int | None
    prompt_sha256: str
    # Present (true) only for a redacted prompt: the route leaves unset fields out, so
    # every other row keeps the shape of SPEC §11 exactly.
    redacted: bool = False
    memory_ids: list[str]
    chars: int
    tokens: int
    counts: Counts
    cache: CacheOut | None
    context: ContextOut


class DeliveryList(BaseModel):
    deliveries: list[DeliverySummary]
    total: int
    limit: int
    offset: int
    next_offset: int | None


@agent_deliveries.get("/{slug}/deliveries", response=DeliveryList, exclude_unset=True)
def list_deliveries(request: ApiRequest, slug: str, params: Query[ListParams]) -> DeliveryList:
    """Newest first (an agent's delivery times are unique). ``memory`` keeps the deliveries whose prompt
    held that memory; ``before`` those delivered at or before that time, so
    ``before=T&limit=1`` is the prompt in force at T.
    """
    agent = get_agent(team_of(request), slug, full=False)
    page = delivery_page(
        agent,
        params.limit,
        params.offset,
        session=params.session,
        memory=params.memory,
        before=params.before,
    )
    return DeliveryList(
        deliveries=[
            DeliverySummary(
                delivery_id=row.delivery.id,
                delivered_at=row.delivery.delivered_at,
                session=row.delivery.session,
                model=row.delivery.model,
                revision=row.delivery.revision,
                prompt_sha256=row.stored.prompt_sha256,
                **_redacted_row(row.stored),
                memory_ids=sorted(memory_ids_of(row.stored)),
                chars=row.stored.chars,
                tokens=row.stored.tokens,
                counts=Counts(sections=row.stored.sections, entries=row.stored.entries),
                cache=_cache(row.delivery),
                context=_context(row.delivery, row.stored.tokens, agent.model),
            )
            for row in page.rows
        ],
        total=page.total,
        limit=params.limit,
        offset=params.offset,
        next_offset=page.next_offset,
    )


@deliveries.get("/{delivery_id}", response=DeliveryOut)
def get_delivery(request: ApiRequest, delivery_id: str) -> HttpResponse:
    """A delivery exactly as it was delivered."""
    delivery = find_delivery(team_of(request), delivery_id)
    return _answer(delivery, composition_json(delivery.composition), 200, agent=delivery.agent.slug)


class DiffParams(BaseModel):
    against: Annotated[str | None, BeforeValidator(_label)] = None


class Sizes(BaseModel):
    from_: int = Field(alias="from")
    to: int


class Redacted(BaseModel):
    from_: bool = Field(alias="from")
    to: bool


class MemoryChanges(BaseModel):
    added: list[str]
    removed: list[str]


class DiffOut(BaseModel):
    from_: str | None = Field(alias="from")
    to: str
    diff: str
    memories: MemoryChanges
    chars: Sizes
    tokens: Sizes
    # Present when either prompt was redacted by an erasure (SPEC §15): which of them.
    redacted: Redacted | None = None
    # Every revision and memory event between the two, oldest first (SPEC §14), at most
    # memory.deliveries.causes.CAUSES_MAX of them; ``causes_total`` counts them all.
    causes: list[dict[str, Any]]
    causes_total: int


@deliveries.get("/{delivery_id}/diff", response=DiffOut, by_alias=True, exclude_unset=True)
@costly
def diff_deliveries(request: ApiRequest, delivery_id: str, params: Query[DiffParams]) -> DiffOut:
    """The prompt's unified diff from ``against`` (default: the same agent's previous
    delivery; none gives ``from: null`` and an empty old prompt) to this delivery, the
    memories added and removed, and the sizes before and after.
    """
    found = delivery_diff(team_of(request), delivery_id, params.against)
    comparison = found.comparison
    redacted = _redacted(found)
    return DiffOut.model_validate(
        {
            **({"redacted": redacted} if redacted else {}),
            "from": None if found.before is None else found.before.id,
            "to": found.after.id,
            "diff": comparison.diff,
            "memories": {"added": comparison.added, "removed": comparison.removed},
            "chars": {"from": comparison.chars[0], "to": comparison.chars[1]},
            "tokens": {"from": comparison.tokens[0], "to": comparison.tokens[1]},
            "causes": found.causes.items,
            "causes_total": found.causes.total,
        }
    )


def _redacted_row(stored: StoredComposition) -> dict[str, bool]:
    # Set only when true: unset fields are left out of the answer (``exclude_unset``).
    return {"redacted": True} if stored.redacted_at is not None else {}


def _redacted(found: DeliveryDiff) -> dict[str, bool] | None:
    before = found.before is not None and found.before.composition.redacted_at is not None
    after = found.after.composition.redacted_at is not None
    return {"from": before, "to": after} if before or after else None
