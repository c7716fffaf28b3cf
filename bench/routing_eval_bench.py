"""The routing eval (SPEC §18.1): 1,000 routing cases scored in process (goal under
200 ms pure), and ``GET /api/agents/{slug}/routing-eval``'s work with its reads (the
cases and the declarations). ``DEBUG=1 .venv/bin/python -m bench routing_eval_bench``
runs it alone.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from lens.actors import SYSTEM
from lens.core.config import AgentConfig
from lens.models import Agent, Team
from memory.configuring import store_agent
from memory.core.presets import PROJECT
from memory.core.routing import RoutingContext
from memory.core.routing_eval import CASES_MAX, Case, CaseInput, evaluate_cases
from memory.routing_cases import eval_agent, replace_cases

_RUN = uuid.uuid4().hex[:8]
KINDS = ("convention", "decision", "state", "fact", "episode")
SECTIONS = ("conventions", "project_context", "project_state", None, None)


def cases() -> list[Case]:
    """1,000 cases of every outcome: placed, declined, labelled and not, a few wrong."""
    return [
        Case(
            f"case {i}",
            KINDS[i % 5],
            f"Case number {i}: " + "a plain sentence about the project. " * 8,
            ("bench",),
            f"label {i}" if i % 2 else None,
            SECTIONS[(i + (i % 7 == 0)) % 5],
        )
        for i in range(CASES_MAX)
    ]


def run(median_ms: Callable[..., float], report: Callable[..., None]) -> None:
    print("\nRouting eval")
    ctx = RoutingContext(sections=PROJECT.sections)
    found = cases()
    report(
        "routing eval of 1,000 cases (pure)",
        median_ms(lambda: evaluate_cases(PROJECT, ctx, found), 7),
        200,
    )
    team = Team.objects.create(slug=f"bench-routing-{_RUN}", name="Bench routing")
    config = {
        "name": "Bench",
        "routing_spec": "project",
        "background": {
            "sections": [s.model_dump() for s in PROJECT.sections],
        },
    }
    agent, _ = store_agent(team, "bench", AgentConfig.model_validate(config))
    inputs = [CaseInput.model_validate({**c.answer()}) for c in found]
    replace_cases(agent, inputs, SYSTEM)
    agent = Agent.objects.get(pk=agent.pk)
    report(
        "routing-eval of 1,000 stored cases (reads + eval)",
        median_ms(lambda: eval_agent(agent), 5),
        400,
    )


def cleanup() -> None:
    Team.objects.filter(slug=f"bench-routing-{_RUN}").delete()
