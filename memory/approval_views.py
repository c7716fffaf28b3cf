"""The approval queue: people decide guarded promotions here (never API tokens)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_GET, require_POST

from lens.actors import Actor
from lens.http import (
    PAGE_SIZE,
    AppRequest,
    current_team,
    get_record_for_user,
    no_team_page,
    render_list,
    require_team,
)
from lens.models import Team
from memory.decisions import (
    AddressTaken,
    AlreadyDecided,
    Decided,
    NotAllPending,
    decide,
    decide_many,
    pending_count,
    reopen,
    revoke,
)
from memory.forms import BulkDecisionForm, DecisionForm, ReasonForm
from memory.queue import guarded_sections, pending, queue_rows, team_agents

PERMISSION = "memory.approve_promotion"


def require_reviewer(request: AppRequest) -> None:
    # Checked in the view, not only by hiding buttons: a fragment can be posted alone.
    if not request.user.has_perm(PERMISSION):
        raise PermissionDenied("Deciding promotions needs the memory.approve_promotion permission.")


def _filters(request: AppRequest) -> dict[str, str]:
    return {k: request.GET.get(k, "") or request.POST.get(k, "") for k in ("agent", "section")}


def _filter_query(request: AppRequest) -> str:
    return urlencode({k: v for k, v in _filters(request).items() if v})


def _queue_context(request: AppRequest, team: Team, **extra: Any) -> dict[str, Any]:
    filters = _filters(request)
    page = Paginator(pending(team, **filters), PAGE_SIZE).get_page(
        request.GET.get("page") or request.POST.get("page")
    )
    return {
        "page": page,
        "rows": queue_rows(list(page.object_list)),
        "filters": filters,
        "filter_query": _filter_query(request),
        "agents": team_agents(team),
        "sections": guarded_sections(team),
        "can_decide": request.user.has_perm(PERMISSION),
        "select_all": request.GET.get("select") == "all",
        "nav": "approvals",
        **extra,
    }


@require_GET
@login_required
def queue(request: AppRequest) -> HttpResponse:
    team = current_team(request)
    if team is None:
        return no_team_page(request, "Approval queue", "approvals")
    return render_list(request, "memory/approvals.html", _queue_context(request, team))


def _back_to_queue(request: AppRequest) -> HttpResponse:
    query = _filter_query(request)
    return redirect(reverse("approvals") + (f"?{query}" if query else ""))


@require_POST
@login_required
def decide_one(request: AppRequest, record_id: str) -> HttpResponse:
    record = get_record_for_user(request, record_id)
    require_reviewer(request)
    form = DecisionForm(request.POST)
    if not form.is_valid():
        return HttpResponse(form.first_error(), status=400)
    team = require_team(request)
    actor = Actor.for_user(request.user)
    result = decide(record.pk, form.approve, actor, form.note, team=team)
    if isinstance(result, AlreadyDecided):
        notice, outcome = result.notice, "stale"
    else:
        verb = "Approved" if form.approve else "Rejected"
        notice = f"{verb} by {actor.label}" + (f": {form.note}" if form.note else ".")
        outcome = "approved" if form.approve else "rejected"
    if request.htmx:
        context = {
            "record_id": record.pk,
            "notice": notice,
            "outcome": outcome,
            "pending_count": pending_count(team),
        }
        return render(request, "memory/approvals.html#decided", context)
    (messages.warning if outcome == "stale" else messages.success)(request, notice)
    return _back_to_queue(request)


@require_POST
@login_required
def decide_bulk(request: AppRequest) -> HttpResponse:
    team = require_team(request)
    require_reviewer(request)
    form = BulkDecisionForm(request.POST)
    error, notice = None, ""
    if not form.is_valid():
        error = form.first_error()
    else:
        try:
            actor = Actor.for_user(request.user)
            ids = form.cleaned_data["selected"]
            done = decide_many(team, ids, form.approve, actor, form.note)
        except NotAllPending as exc:
            error = exc.message
        else:
            verb = "Approved" if form.approve else "Rejected"
            notice = f"{verb} {len(done)} memor{'y' if len(done) == 1 else 'ies'}."
    if request.htmx:
        extra = {"bulk_error": error} if error else {"bulk_notice": notice}
        return render(
            request, "memory/approvals.html#results", _queue_context(request, team, **extra)
        )
    if error:
        messages.error(request, error)
    else:
        messages.success(request, notice)
    return _back_to_queue(request)


def _page_decision(
    request: AppRequest,
    record_id: str,
    act: Callable[..., Decided | AlreadyDecided | AddressTaken | None],
    only: str,
    done: str,
) -> HttpResponse:
    """A reviewer's revoke or reopen from a memory's page: the record must be the current
    team's, the reason short enough; the page says what happened (or why nothing did)."""
    record = get_record_for_user(request, record_id)
    require_reviewer(request)
    form = ReasonForm(request.POST)
    if not form.is_valid():
        return HttpResponse("The reason is too long.", status=400)
    actor = Actor.for_user(request.user)
    result = act(record.pk, actor, form.cleaned_data["reason"], team=require_team(request))
    if isinstance(result, AddressTaken):
        messages.warning(request, result.notice)
    elif isinstance(result, AlreadyDecided):
        messages.warning(request, f"{only} {result.notice}")
    else:
        messages.success(request, done.format(actor=actor.label))
    return redirect("memory-detail", record_id=record.pk)


@require_POST
@login_required
def reopen_one(request: AppRequest, record_id: str) -> HttpResponse:
    """Put a rejected or revoked memory back into the approval queue (SPEC §5.4)."""
    return _page_decision(
        request,
        record_id,
        reopen,
        "Only a rejected or revoked memory can be reopened.",
        "Reopened by {actor}: it waits in the approval queue.",
    )


@require_POST
@login_required
def revoke_one(request: AppRequest, record_id: str) -> HttpResponse:
    """Take a composed memory out of the prompt (its status becomes ``revoked``)."""
    return _page_decision(
        request,
        record_id,
        revoke,
        "Only an approved memory can be revoked.",
        "Revoked by {actor}: it left the prompt.",
    )
