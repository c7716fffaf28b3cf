"""``/api/agents/{slug}/stability``: how stable an agent's prompt has been over its last
deliveries, and a measured better order of its Background sections (SPEC §17)."""

from __future__ import annotations

from ninja import Query, Router
from pydantic import BaseModel, Field

from lens.agents import get_agent
from memory.stability import LAST_DEFAULT, LAST_MAX, stability
from web.api.auth import ApiRequest, team_of
from web.costly import costly

router = Router(tags=["stability"])


class StabilityParams(BaseModel):
    # Checked by the operation too, which says the limit; here the query's type.
    last: int = Field(LAST_DEFAULT, ge=2, le=LAST_MAX)


class SectionOut(BaseModel):
    section: str
    background_section: str | None
    changed_in: int
    tokens: int


class StabilityOut(BaseModel):
    deliveries: int
    sections: list[SectionOut]
    current_order: list[str]
    prefix_tokens_mean: float | None
    suggested_order: list[str]
    suggested_prefix_tokens_mean: float | None
    # Beyond SPEC §17's fields: the current order measured the way the suggestion is,
    # and both under each provider's rule (lens.core.provider_caches): OpenAI's (from
    # 1,024 tokens, in 128-token steps) and Anthropic's (at breakpoints after the
    # authored sections and at the end, from 1,024 tokens).
    current_prefix_tokens_mean: float | None
    openai_cached_tokens_mean: float | None
    suggested_openai_cached_tokens_mean: float | None
    anthropic_cached_tokens_mean: float | None
    suggested_anthropic_cached_tokens_mean: float | None


@router.get("/{slug}/stability", response=StabilityOut)
@costly
def agent_stability(request: ApiRequest, slug: str, params: Query[StabilityParams]) -> StabilityOut:
    found = stability(get_agent(team_of(request), slug, full=False), params.last)
    return StabilityOut(
        deliveries=found.deliveries,
        sections=[SectionOut(**vars(figure)) for figure in found.sections],
        current_order=found.current_order,
        prefix_tokens_mean=found.prefix_tokens_mean,
        suggested_order=found.suggested_order,
        suggested_prefix_tokens_mean=found.suggested_prefix_tokens_mean,
        current_prefix_tokens_mean=found.current_prefix_tokens_mean,
        openai_cached_tokens_mean=found.openai_cached_mean,
        suggested_openai_cached_tokens_mean=found.suggested_openai_cached_mean,
        anthropic_cached_tokens_mean=found.anthropic_cached_mean,
        suggested_anthropic_cached_tokens_mean=found.suggested_anthropic_cached_mean,
    )
