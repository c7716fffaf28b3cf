"""Dashboard pages: the agents list and the per-agent lens."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from lens.agents import with_counts
from lens.composition import compose
from lens.core.counts import Counts
from lens.models import Agent
from lens.teams import current_team, get_agent_for_user


@require_GET
@login_required
def agent_list(request: HttpRequest) -> HttpResponse:
    team = current_team(request)
    agents = (
        list(with_counts(Agent.objects.filter(team=team)).order_by("name", "slug")) if team else []
    )
    for agent in agents:
        agent.counts = Counts(sections=agent.section_count, entries=agent.authored_entry_count)
    return render(request, "lens/agent_list.html", {"team": team, "agents": agents})


@require_GET
@login_required
def agent_lens(request: HttpRequest, slug: str) -> HttpResponse:
    agent = get_agent_for_user(request, slug)
    composition = compose(agent)
    sections = [
        {"section": section, "text_length": len(section.text)}
        for section in composition.prompt.sections
    ]
    context = {
        "agent": agent,
        "composition": composition,
        "sections": sections,
        "prompt_length": len(composition.prompt.text),
        "declared": composition.background.sections,
    }
    return render(request, "lens/agent_lens.html", context)
