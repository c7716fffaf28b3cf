"""The approval queue: people decide guarded promotions here (never API tokens)."""

from __future__ import annotations

import difflib
from html import escape
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_GET, require_POST

from lens.models import Agent, AuthoredEntry, SectionDeclaration, Team
from lens.teams import require_team
from memory.actors import Actor
from memory.approvals import (
    AlreadyDecided,
    NotAllPending,
    decide,
    decide_many,
    pending_count,
    revoke,
)
from memory.models import Promotion, Status

PAGE_SIZE = 50
PERMISSION = "memory.approve_promotion"
REASON_MAX = 2000


def _reviewable(request: HttpRequest, record_id: str) -> Team:
    """The current team, when ``record_id`` is one of its memories (else 404) and the
    user may decide (else 403).
    """
    team = require_team(request)
    if not Promotion.objects.filter(pk=record_id, agent__team=team).exists():
        raise Http404("No such memory")
    _require_reviewer(request)
    return team


def _require_reviewer(request: HttpRequest) -> None:
    # Checked in the view, not only by hiding buttons: a fragment can be posted alone.
    if not request.user.has_perm(PERMISSION):
        raise PermissionDenied("Deciding promotions needs the memory.approve_promotion permission.")


def pending_queryset(team: Team, agent: str = "", section: str = "") -> QuerySet[Promotion]:
    rows = Promotion.objects.filter(agent__team=team, status=Status.PENDING)
    if agent:
        rows = rows.filter(agent__slug=agent)
    if section:
        rows = rows.filter(section=section)
    return rows.select_related("record", "record__supersedes", "agent").order_by(
        "promoted_at", "record_id"
    )


def _rows(team: Team, promotions: list[Promotion]) -> list[dict[str, Any]]:
    """Queue rows with their section titles and what each would replace (3 queries)."""
    agent_ids = {p.agent_id for p in promotions}
    titles = {
        (agent_id, section_id): title
        for agent_id, section_id, title in SectionDeclaration.objects.filter(
            agent_id__in=agent_ids
        ).values_list("agent_id", "section_id", "title")
    }
    authored = {
        (agent_id, section_id, key): value
        for agent_id, section_id, key, value in AuthoredEntry.objects.filter(
            section__agent_id__in=agent_ids, key__in={p.key for p in promotions}
        ).values_list("section__agent_id", "section__section_id", "key", "value")
    }
    older_ids = [p.record.supersedes_id for p in promotions if p.record.supersedes_id]
    older_places = {
        record_id: (section, key)
        for record_id, section, key in Promotion.objects.filter(
            record_id__in=older_ids
        ).values_list("record_id", "section", "key")
    }
    rows = []
    for promotion in promotions:
        record = promotion.record
        replaces: dict[str, Any] | None = None
        authored_value = authored.get((promotion.agent_id, promotion.section, promotion.key))
        older = record.supersedes
        if authored_value is not None:
            replaces = {
                "kind": "authored",
                "diff": word_diff(str(authored_value), record.content),
            }
        elif older is not None and older_places.get(older.pk) == (promotion.section, promotion.key):
            replaces = {
                "kind": "memory",
                "id": older.pk,
                "diff": word_diff(older.content, record.content),
            }
        rows.append(
            {
                "promotion": promotion,
                "record": record,
                "section_title": titles.get((promotion.agent_id, promotion.section)),
                "replaces": replaces,
            }
        )
    return rows


def word_diff(old: str, new: str) -> SafeString:
    """A word-level diff of ``old`` → ``new`` as <del>/<ins> spans (escaped)."""
    a, b = old.split(" "), new.split(" ")
    parts = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            parts.append(escape(" ".join(a[i1:i2])))
            continue
        if i2 > i1:
            parts.append(f"<del>{escape(' '.join(a[i1:i2]))}</del>")
        if j2 > j1:
            parts.append(f"<ins>{escape(' '.join(b[j1:j2]))}</ins>")
    return mark_safe(" ".join(parts))  # every piece is escaped above


def _filters(request: HttpRequest) -> dict[str, str]:
    return {k: request.GET.get(k, "") or request.POST.get(k, "") for k in ("agent", "section")}


def _queue_context(request: HttpRequest, team: Team, **extra: Any) -> dict[str, Any]:
    filters = _filters(request)
    page = Paginator(pending_queryset(team, **filters), PAGE_SIZE).get_page(
        request.GET.get("page") or request.POST.get("page")
    )
    agents = list(Agent.objects.filter(team=team).order_by("name"))
    sections = sorted(
        set(
            SectionDeclaration.objects.filter(agent__team=team, promotion="guarded").values_list(
                "section_id", flat=True
            )
        )
    )
    return {
        "page": page,
        "rows": _rows(team, list(page.object_list)),
        "filters": filters,
        "filter_query": urlencode({k: v for k, v in filters.items() if v}),
        "agents": agents,
        "sections": sections,
        "can_decide": request.user.has_perm(PERMISSION),
        "select_all": request.GET.get("select") == "all",
        "nav": "approvals",
        **extra,
    }


@require_GET
@login_required
def queue(request: HttpRequest) -> HttpResponse:
    team = require_team(request)
    return render(request, "memory/approvals.html", _queue_context(request, team))


def _back_to_queue(request: HttpRequest) -> HttpResponse:
    query = urlencode({k: v for k, v in _filters(request).items() if v})
    return redirect("/approvals/" + (f"?{query}" if query else ""))


@require_POST
@login_required
def decide_one(request: HttpRequest, record_id: str) -> HttpResponse:
    team = _reviewable(request, record_id)
    decision = request.POST.get("decision")
    if decision not in ("approve", "reject"):
        return HttpResponse("decision must be approve or reject", status=400)
    reason = request.POST.get("reason", "").strip()[:REASON_MAX] if decision == "reject" else ""
    result = decide(
        record_id, decision == "approve", Actor.for_user(request.user), reason, team=team
    )
    if isinstance(result, AlreadyDecided):
        notice, outcome = result.notice, "stale"
    else:
        verb = "Approved" if decision == "approve" else "Rejected"
        notice = f"{verb} by {request.user.get_username()}" + (f": {reason}" if reason else ".")
        outcome = "approved" if decision == "approve" else "rejected"
    if request.htmx:  # type: ignore[attr-defined]
        context = {
            "record_id": record_id,
            "notice": notice,
            "outcome": outcome,
            "pending_count": pending_count(team),
        }
        return render(request, "memory/approvals.html#decided", context)
    (messages.warning if outcome == "stale" else messages.success)(request, notice)
    return _back_to_queue(request)


@require_POST
@login_required
def decide_bulk(request: HttpRequest) -> HttpResponse:
    team = require_team(request)
    _require_reviewer(request)
    decision = request.POST.get("decision")
    ids = request.POST.getlist("selected")
    reason = request.POST.get("reason", "").strip()[:REASON_MAX] if decision == "reject" else ""
    error = None
    if decision not in ("approve", "reject"):
        error = "Choose Approve selected or Reject selected."
    elif not ids:
        error = "Select at least one memory first."
    else:
        try:
            done = decide_many(
                team, ids, decision == "approve", Actor.for_user(request.user), reason
            )
        except NotAllPending as exc:
            error = (
                f"Nothing was changed: {len(exc.stale)} of the selected memories are no longer "
                "pending (someone decided them, or they were superseded)."
            )
        else:
            verb = "Approved" if decision == "approve" else "Rejected"
            notice = f"{verb} {len(done)} memor{'y' if len(done) == 1 else 'ies'}."
    if request.htmx:  # type: ignore[attr-defined]
        extra = {"bulk_error": error} if error else {"bulk_notice": notice}
        return render(
            request, "memory/approvals.html#queue", _queue_context(request, team, **extra)
        )
    if error:
        messages.error(request, error)
    else:
        messages.success(request, notice)
    return _back_to_queue(request)


@require_POST
@login_required
def revoke_one(request: HttpRequest, record_id: str) -> HttpResponse:
    team = _reviewable(request, record_id)
    reason = request.POST.get("reason", "").strip()[:REASON_MAX]
    result = revoke(record_id, Actor.for_user(request.user), reason, team=team)
    if isinstance(result, AlreadyDecided):
        messages.warning(request, f"Only an approved memory can be revoked. {result.notice}")
    else:
        messages.success(request, f"Revoked by {request.user.get_username()}: it left the prompt.")
    return redirect("memory-detail", record_id=record_id)
