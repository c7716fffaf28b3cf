"""An agent's composition as ``GET /api/agents/{slug}/composition`` answers it, and the
MCP resource ``lens://agents/{slug}/composition`` with it: the composition's canonical
JSON with ``context`` spliced in."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Literal

from pydantic import BaseModel

from lens.context_windows import context_of
from lens.models import Agent
from memory.as_of import compose_as_of, config_at
from memory.composed import current
from memory.core.composition import Composition


class ContextOut(BaseModel):
    """The prompt's tokens against the context window of the agent's declared model:
    ``window`` null when no model is declared or its window is not known (then
    ``share`` and ``level`` are null too); ``share`` above 1 when it does not fit."""

    model: str | None
    window: int | None
    share: float | None
    level: Literal["ok", "warning", "alarm"] | None


class CompositionOut(Composition):
    context: ContextOut


def composition_answer(agent: Agent, as_of: datetime | None = None) -> str:
    """The composition endpoint's body (``CompositionOut``): ``agent`` composed now, or
    as it stood at ``as_of``, with ``context``: its tokens against the context window of
    the model the agent declared (then)."""
    if as_of is None:
        # Composed once per change (``memory.composed``), its JSON written once too.
        now = current(agent)
        composition, model, body = now.composition, agent.model, now.canonical_json()
    else:
        composition, model = compose_as_of(agent, as_of), config_at(agent, as_of).model
        # Written by pydantic in one call, as a delivery's stored JSON is: for a large
        # agent that is several times faster than dumping to Python values and encoding.
        body = composition.canonical_json()
    context = context_of(composition.tokens.total, model)
    # ``context`` is spliced in: it is about the model, not the prompt, so a stored
    # composition (a delivery's) never holds it.
    return body[:-1] + ',"context":' + json.dumps(context.as_json()) + "}"
