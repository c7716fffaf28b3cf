"""Memory pages: a team's memories, and one record's full story."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.text import Truncator
from django.views.decorators.http import require_GET, require_POST

from lens.actors import Actor
from lens.agents import with_config
from lens.core.errors import DomainError
from lens.models import Agent
from memory import search
from memory.composed import current_composition
from memory.core.explain import Link, short_words, tone_of
from memory.core.records import stored_problem
from memory.core.tokenizer import highlight
from memory.deliveries.ledger import shaped_by
from memory.explain import explain_memory, prompt_reasons
from memory.models import MemoryRecord
from memory.queries import ERASED_WORDS, listed
from memory.sightings import seen_for
from memory.validity import change_validity
from web.costly import costly_when, searching
from web.pages.memory_forms import ValidityForm
from web.pages.routing_case_forms import case_form_for
from web.pages.toolkit import (
    PAGE_SIZE,
    AppRequest,
    WrongTeam,
    can_review,
    current_team,
    get_record_for_user,
    no_team_page,
    render_list,
    require_team,
    use_form_team,
)


@require_GET
@login_required
@costly_when(searching)
def memory_list(request: AppRequest) -> HttpResponse:
    """The team's memories, newest first; with ``q``, the ones that match, best first."""
    team = current_team(request)
    if team is None:
        return no_team_page(request, "Memories", "memories")
    # Sections prefetched: each agent on the page is folded to tell whether a memory is
    # in its prompt now (``prompt_reasons``).
    agents = list(Agent.objects.filter(team=team).prefetch_related("sections").order_by("name"))
    agent_slug = request.GET.get("agent", "")
    kind = request.GET.get("kind", "")
    query = request.GET.get("q", "")
    error = None
    records: Any = MemoryRecord.objects.none()
    wanted: set[str] = set()
    broad = False
    if query.strip():
        chosen = [a.pk for a in agents if not agent_slug or a.slug == agent_slug]
        try:
            records = search.Results(chosen, query, kind)
            wanted = set(records.terms)
            broad = records.broad
        except search.InvalidQuery as exc:
            error = exc.message
    else:
        records = MemoryRecord.objects.filter(agent__team=team).select_related("agent", "promotion")
        if agent_slug:
            records = records.filter(agent__slug=agent_slug)
        records = listed(records, kind)
    page = Paginator(records, PAGE_SIZE).get_page(request.GET.get("page"))
    shown = list(page.object_list)
    # Each agent on the page composed once: the status says whether a memory is in its
    # prompt now, never the promotion row's status alone.
    reasons = prompt_reasons(shown, agents)
    rows = [
        {
            "record": record,
            "reason": reasons[record.pk],
            "short": short_words(reasons[record.pk]),
            "tone": tone_of(reasons[record.pk]),
            # An erased record is blank on purpose: it says so, and is no unreadable row.
            "parts": [(ERASED_WORDS, False)]
            if record.erased
            else highlight(Truncator(record.content).chars(160), wanted),
            "label_parts": highlight(record.label or "", wanted),
            "problem": None
            if record.erased
            else stored_problem(record.kind, len(record.content), record.tags or [], record.label),
        }
        for record in shown
    ]
    context = {
        "page": page,
        "rows": rows,
        "unreadable": sum(1 for row in rows if row["problem"]),
        "agents": agents,
        "agent_slug": agent_slug,
        "kind": kind,
        "q": query,
        "searching": bool(query.strip()),
        "broad": broad,
        "ranked_max": search.RANKED_MAX,
        "search_error": error,
        "nav": "memories",
    }
    return render_list(request, "memory/memory_list.html", context)


# The memory page lists this many of the deliveries a memory shaped; the timeline,
# filtered by the memory, has them all.
DELIVERED_IN_SHOWN = 10


@require_GET
@login_required
def memory_detail(request: AppRequest, record_id: str) -> HttpResponse:
    record = get_record_for_user(request, record_id)
    agent = with_config(Agent.objects.filter(pk=record.agent_id)).get()
    return render(request, "memory/memory_detail.html", detail_context(request, record, agent))


@require_POST
@login_required
def memory_validity(request: AppRequest, record_id: str) -> HttpResponse:
    """A reviewer sets, moves or clears a memory's ``valid_until`` (SPEC §19.2). A bad
    date answers the page again with the error (400); nothing changes."""
    try:
        team = use_form_team(request)
    except WrongTeam as exc:
        return HttpResponse(exc.message, status=400, content_type="text/plain; charset=utf-8")
    record = get_record_for_user(request, record_id)
    # Checked in the view, not only by hiding the form: a form can be posted alone.
    if not can_review(request.user, team):
        raise PermissionDenied(
            f"Changing a memory's validity window in team {team.slug} needs the reviewer "
            "role in it (or the memory.approve_promotion permission)."
        )
    form = ValidityForm(request.POST)
    error = None
    if form.is_valid():
        try:
            change_validity(
                record.pk, form.cleaned_data["moment"], Actor.for_user(request.user), team=team
            )
        except DomainError as exc:
            error = exc.message
    else:
        error = " ".join(str(message) for errors in form.errors.values() for message in errors)
    if error is not None:
        agent = with_config(Agent.objects.filter(pk=record.agent_id)).get()
        context = {**detail_context(request, record, agent), "validity_error": error}
        return render(request, "memory/memory_detail.html", context, status=400)
    detail = reverse("memory-detail", args=[record.pk])
    return redirect(f"{detail}?{urlencode({'team': team.slug})}")


def detail_context(request: AppRequest, record: MemoryRecord, agent: Agent) -> dict[str, Any]:
    """Everything a memory's page shows (its "Add as a routing case" form unbound)."""
    composition = current_composition(agent)
    explanation = explain_memory(agent, composition, record.pk)
    section_titles = {s.id: s.title for s in composition.background.sections}
    promotion = getattr(record, "promotion", None)
    delivered = shaped_by(agent, record.pk, DELIVERED_IN_SHOWN)
    return {
        "record": record,
        "agent": agent,
        "promotion": promotion,
        "section_title": section_titles.get(promotion.section or "") if promotion else None,
        # A migration's addresses in its history read with the sections' titles.
        "section_titles": section_titles,
        "composed": explanation.in_prompt,
        "explanation": explanation,
        "why": [(piece.text, _href(piece.link)) for piece in explanation.pieces],
        "superseded_by": list(record.superseded_by.order_by("created_at")),
        "events": list(record.events.select_related("actor_user").order_by("at", "id")),
        "can_decide": can_review(request.user, require_team(request)),
        "deliveries": delivered[0],
        "delivery_total": delivered[1],
        "case_form": None if record.erased else case_form_for(record, agent, promotion),
        "seen": seen_for(promotion),
        "validity_error": None,
        "nav": "memories",
    }


def _href(link: Link | None) -> str:
    """The page a link of an explanation leads to ("" for none)."""
    if link is None:
        return ""
    if link.kind == "memory":
        return reverse("memory-detail", args=[link.target])
    return f"{reverse('approvals')}?{urlencode({'agent': link.target})}"
