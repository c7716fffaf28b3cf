"""Composing an agent's prompt from what is stored: the thin shell over the pure core."""

from __future__ import annotations

from lens.agents import config_of
from lens.core.composition import Composition, Prompt
from lens.core.counts import Counts
from lens.core.render import render_sections
from lens.models import Agent
from memory.report import RoutingReport


def compose(agent: Agent) -> Composition:
    """Compose ``agent`` (load it with ``lens.agents.with_config`` to stay query-flat)."""
    config = config_of(agent)
    background = config.background
    return Composition(
        agent=agent.slug,
        spec=None,
        background=background,
        prompt=Prompt(sections=render_sections(config, background)),
        report=RoutingReport(),
        counts=Counts.of(config.background, background),
    )
