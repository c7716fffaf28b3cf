"""Memory pages: a team's memories, and one record's full story."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from lens.agents import with_config
from lens.core.report import DROP_REASON_HELP
from lens.http import PAGE_SIZE, AppRequest, current_team, get_record_for_user, render_list
from lens.models import Agent
from memory.approval_views import PERMISSION
from memory.composition import compose
from memory.models import MemoryRecord
from memory.queries import listed


@require_GET
@login_required
def memory_list(request: AppRequest) -> HttpResponse:
    team = current_team(request)
    agents = list(Agent.objects.filter(team=team).order_by("name")) if team else []
    agent_slug = request.GET.get("agent", "")
    kind = request.GET.get("kind", "")
    records = MemoryRecord.objects.filter(agent__team=team).select_related("agent", "promotion")
    if agent_slug:
        records = records.filter(agent__slug=agent_slug)
    records = listed(records, kind)
    page = Paginator(records, PAGE_SIZE).get_page(request.GET.get("page"))
    context = {
        "page": page,
        "agents": agents,
        "agent_slug": agent_slug,
        "kind": kind,
        "nav": "memories",
    }
    return render_list(request, "memory/memory_list.html", context)


@require_GET
@login_required
def memory_detail(request: AppRequest, record_id: str) -> HttpResponse:
    record = get_record_for_user(request, record_id)
    agent = with_config(Agent.objects.filter(pk=record.agent_id)).get()
    composition = compose(agent)
    drop = next((d for d in composition.report.drops if d.memory_id == record.pk), None)
    section_titles = {s.id: s.title for s in composition.background.sections}
    promotion = getattr(record, "promotion", None)
    context = {
        "record": record,
        "agent": agent,
        "promotion": promotion,
        "section_title": section_titles.get(promotion.section or "") if promotion else None,
        "composed": drop is None,
        "drop": drop,
        "drop_help": DROP_REASON_HELP.get(drop.reason, "") if drop else "",
        "superseded_by": list(record.superseded_by.order_by("created_at")),
        "events": list(record.events.select_related("actor_user").order_by("at", "id")),
        "can_decide": request.user.has_perm(PERMISSION),
        "nav": "memories",
    }
    return render(request, "memory/memory_detail.html", context)
