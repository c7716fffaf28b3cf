"""The approval queue: people decide guarded promotions here (never API tokens)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models.functions import Substr
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.http import urlencode
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from lens.actors import Actor
from lens.models import Team
from memory.core.explain import stop
from memory.core.impact import NAME_CHARS, named
from memory.core.records import is_record_id
from memory.decisions import (
    AddressTaken,
    AlreadyDecided,
    Decided,
    NotAllPending,
    UndoRefused,
    decide,
    decide_many,
    reopen,
    revoke,
    undo,
    undo_many,
    undo_seconds,
)
from memory.models import MemoryRecord, Promotion, PromotionStatus
from memory.queue import (
    guarded_sections,
    pending,
    queue_rows,
    revoke_preview,
    team_agents,
    with_row_relations,
)
from web.pages.memory_forms import (
    BulkDecisionForm,
    ConfirmForm,
    DecisionForm,
    ReasonForm,
    UndoForm,
    UndoManyForm,
)
from web.pages.proposal_rows import queue_proposals
from web.pages.queue_count import queue_count
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

# Without JavaScript the queue offers Undo for the reviewer's last decision, kept here.
LAST_DECISION = "approvals_last_decision"


def require_reviewer(request: AppRequest, team: Team) -> None:
    # Checked in the view, not only by hiding buttons: a fragment can be posted alone.
    if not can_review(request.user, team):
        raise PermissionDenied(
            f"Deciding promotions of team {team.slug} needs the reviewer role in it "
            "(or the memory.approve_promotion permission)."
        )


def _form_team(request: AppRequest, queue_page: bool = True) -> Team | HttpResponse:
    """The team the posted form was rendered for, now the request's current team (every
    lookup after this happens in it); a 400 saying so when the form names none of the
    user's teams: nothing is decided.

    htmx shows the 400's text in the row; without JavaScript the queue comes back for the
    team the user works in now, with the message.
    """
    try:
        return use_form_team(request)
    except WrongTeam as exc:
        team = current_team(request)
        if request.htmx or not queue_page or team is None:
            return HttpResponse(exc.message, status=400, content_type="text/plain; charset=utf-8")
        context = _queue_context(request, team, bulk_error=exc.message)
        return render(request, "memory/approvals.html", context, status=400)


def _filters(request: AppRequest) -> dict[str, str]:
    return {
        k: request.GET.get(k, "") or request.POST.get(k, "") for k in ("agent", "section", "show")
    }


def _filter_query(request: AppRequest) -> str:
    return urlencode({k: v for k, v in _filters(request).items() if v})


def _queue_context(request: AppRequest, team: Team, **extra: Any) -> dict[str, Any]:
    filters = _filters(request)
    page = Paginator(pending(team, **filters), PAGE_SIZE).get_page(
        request.GET.get("page") or request.POST.get("page")
    )
    can_decide = can_review(request.user, team)
    agents = team_agents(team)
    # Proposals head the first page; a section filter is about memories' sections, which
    # a proposal has none of. Only protected agents have proposals waiting (turning
    # protection off is itself published, which leaves the agent's others stale), so a
    # team without one is not asked for any.
    shows_proposals = (
        page.number == 1
        and not filters["section"]
        and not filters["show"]
        and any(a.protected for a in agents if a.slug == filters["agent"] or not filters["agent"])
    )
    return {
        "page": page,
        "rows": queue_rows(list(page.object_list)),
        "proposals": queue_proposals(request, team, can_decide, filters["agent"])
        if shows_proposals
        else None,
        "filters": filters,
        "filter_query": _filter_query(request),
        "agents": agents,
        "sections": guarded_sections(team),
        "can_decide": can_decide,
        "select_all": request.GET.get("select") == "all",
        "undo_last": _undo_last(request),
        "undo_seconds": undo_seconds(),
        "nav": "approvals",
        **extra,
    }


def _undo_last(request: AppRequest) -> dict[str, Any] | None:
    """The reviewer's last decision taken without JavaScript, while it can be undone."""
    last = request.session.get(LAST_DECISION)
    if not isinstance(last, dict):
        return None
    moment = parse_datetime(str(last.get("at", "")))
    ids = last.get("ids")
    if moment is None or not isinstance(ids, list) or not ids:
        return None
    query = _filter_query(request)
    until = moment + timedelta(seconds=undo_seconds())
    if until <= timezone.now():
        return None  # expired: no need to name the memories
    record_ids = [str(i) for i in ids]
    return _undo_offer(
        record_ids,
        str(last.get("decided", "")),
        moment,
        # Named now, from the records: the session keeps ids only, never a memory's
        # words (a memory erased meanwhile reads as its id).
        _names(record_ids),
        bulk=bool(last.get("bulk")),
        query=f"?{query}" if query else "",
    )


def _undo_offer(
    ids: Sequence[str],
    decided: str,
    at: datetime,
    what: str,
    *,
    bulk: bool,
    query: str = "",
) -> dict[str, Any] | None:
    """An Undo button for a decision of a moment ago, with its deadline (the server
    enforces it: ``memory.decisions.undo``); None once the window has passed."""
    until = at + timedelta(seconds=undo_seconds())
    left = math.ceil((until - timezone.now()).total_seconds())
    if left <= 0:
        return None
    action = reverse("approvals-undo-bulk") if bulk else reverse("approvals-undo", args=[ids[0]])
    return {
        "ids": list(ids),
        "bulk": bulk,
        "decided": decided,
        "at": at.isoformat(),
        "until": until,
        "seconds": left,
        "what": what,
        "action": action + query,
    }


# A notice names the first few memories of a bulk decision, then how many more.
NAMED_IN_NOTICE = 3


def _names(record_ids: Sequence[str]) -> str:
    """“a”, “b”, “c” and 4 more: the memories of a bulk decision, named (one query)."""
    shown = list(record_ids[:NAMED_IN_NOTICE])
    rows = MemoryRecord.objects.filter(pk__in=shown, erased_at__isnull=True).values_list(
        "pk", "label", Substr("content", 1, NAME_CHARS * 2)
    )
    words = {pk: named(label, head) for pk, label, head in rows}
    text = ", ".join(words.get(pk, pk) for pk in shown)
    more = len(record_ids) - len(shown)
    return f"{text} and {more} more" if more > 0 else text


def _memories(count: int) -> str:
    return f"{count} memor{'y' if count == 1 else 'ies'}"


@require_GET
@login_required
def queue(request: AppRequest) -> HttpResponse:
    team = current_team(request)
    if team is None:
        return no_team_page(request, "Approval queue", "approvals")
    return render_list(request, "memory/approvals.html", _queue_context(request, team))


def _ids(text: str) -> list[str]:
    return [i for i in text.split(",") if is_record_id(i)][:PAGE_SIZE]


@require_GET
@login_required
def impacts(request: AppRequest) -> HttpResponse:
    """What approving each listed pending row would do now, as out-of-band swaps: after a
    decision changes an agent's prompt, the page refreshes its other rows' warnings."""
    team = require_team(request)
    promotions = with_row_relations(
        Promotion.objects.filter(
            pk__in=_ids(request.GET.get("ids", "")),
            agent__team=team,
            status=PromotionStatus.PENDING,
        )
    )
    context = {
        "rows": queue_rows(list(promotions)),
        "open_ids": set(_ids(request.GET.get("open", ""))),
    }
    return render(request, "memory/approvals.html#impacts", context)


def _back_to_queue(request: AppRequest, team: Team) -> HttpResponse:
    # Back to the queue of the team decided in, whatever another tab chose since.
    query = urlencode({"team": team.slug, **{k: v for k, v in _filters(request).items() if v}})
    return redirect(f"{reverse('approvals')}?{query}")


def _decided_row(
    request: AppRequest,
    record: MemoryRecord,
    team: Team,
    notice: str,
    outcome: str,
    **extra: Any,
) -> HttpResponse:
    """The row's place in the queue once decided (or once an undo was refused): what
    happened in words, and the team's pending count out of band."""
    context = {
        "record_id": record.pk,
        "agent_slug": record.agent.slug,
        "notice": notice,
        "outcome": outcome,
        "pending_count": queue_count(team),
        **extra,
    }
    return render(request, "memory/approvals.html#decided", context)


@require_POST
@login_required
def decide_one(request: AppRequest, record_id: str) -> HttpResponse:
    team = _form_team(request)
    if isinstance(team, HttpResponse):
        return team
    record = get_record_for_user(request, record_id)
    require_reviewer(request, team)
    form = DecisionForm(request.POST)
    if not form.is_valid():
        return HttpResponse(form.first_error(), status=400)
    actor = Actor.for_user(request.user)
    result = decide(record.pk, form.approve, actor, form.note, team=team)
    offer: dict[str, Any] | None = None
    if isinstance(result, AlreadyDecided):
        notice, outcome = result.notice, "stale"
    else:
        verb = "Approved" if form.approve else "Rejected"
        what = named(record.label, record.content)
        notice = f"{verb} by {actor.label}: {what}{stop(what)}"
        if form.note:
            notice += f" Reason: {form.note}"
        outcome = "approved" if form.approve else "rejected"
        if result is not None and result.promotion.decided_at is not None:
            offer = _undo_offer([record.pk], outcome, result.promotion.decided_at, what, bulk=False)
    if request.htmx:
        return _decided_row(request, record, team, notice, outcome, undo=offer)
    (messages.warning if outcome == "stale" else messages.success)(request, notice)
    if request.POST.get("back") == "memory":
        # Decided on the memory's own page: back to it, showing the decision.
        return redirect(f"{reverse('memory-detail', args=[record.pk])}?team={team.slug}")
    _remember(request, offer)
    return _back_to_queue(request, team)


def _remember(request: AppRequest, offer: dict[str, Any] | None) -> None:
    """Keep the decision for the queue's Undo without JavaScript (the session holds
    plain values, and ids rather than words: a session outlives an erasure)."""
    if offer is not None:
        keep = ("ids", "bulk", "decided", "at")
        request.session[LAST_DECISION] = {k: offer[k] for k in keep}


def _forget(request: AppRequest, record_ids: Sequence[str]) -> None:
    last = request.session.get(LAST_DECISION)
    if isinstance(last, dict) and set(last.get("ids") or ()) & set(record_ids):
        del request.session[LAST_DECISION]


@require_POST
@login_required
def undo_one(request: AppRequest, record_id: str) -> HttpResponse:
    """Take back the reviewer's own decision of a moment ago: the row waits again."""
    team = _form_team(request)
    if isinstance(team, HttpResponse):
        return team
    record = get_record_for_user(request, record_id)
    require_reviewer(request, team)
    form = UndoForm(request.POST)
    if not form.is_valid():
        return HttpResponse("Undo needs the decision it takes back.", status=400)
    decided = form.cleaned_data["decided"]
    try:
        promotion = undo(
            record.pk, Actor.for_user(request.user), decided, form.cleaned_data["at"], team=team
        )
    except UndoRefused as exc:
        if request.htmx:
            return _decided_row(request, record, team, exc.message, decided, undo_refused=True)
        messages.warning(request, exc.message)
        return _back_to_queue(request, team)
    _forget(request, [record.pk])
    what = named(record.label, record.content)
    if request.htmx:
        row = with_row_relations(Promotion.objects.filter(pk=promotion.pk)).get()
        context = {
            "row": queue_rows([row])[0],
            "can_decide": True,
            "filter_query": _filter_query(request),
            "pending_count": queue_count(team),
        }
        return render(request, "memory/approvals.html#restored", context)
    messages.success(request, f"Undone: {what} waits for approval again.")
    return _back_to_queue(request, team)


@require_POST
@login_required
def decide_bulk(request: AppRequest) -> HttpResponse:
    team = _form_team(request)
    if isinstance(team, HttpResponse):
        return team
    require_reviewer(request, team)
    form = BulkDecisionForm(request.POST)
    error, notice, offer = None, "", None
    if not form.is_valid():
        error = form.first_error()
    else:
        try:
            actor = Actor.for_user(request.user)
            ids = form.cleaned_data["selected"]
            at = timezone.now()
            done = decide_many(team, ids, form.approve, actor, form.note, now=at)
        except NotAllPending as exc:
            error = exc.message
        else:
            verb, outcome = ("Approved", "approved") if form.approve else ("Rejected", "rejected")
            names = _names(done)
            notice = f"{verb} {_memories(len(done))}: {names}{stop(names)}"
            query = _filter_query(request)
            offer = _undo_offer(
                done, outcome, at, names, bulk=True, query=f"?{query}" if query else ""
            )
    if request.htmx:
        extra = {"bulk_error": error} if error else {"bulk_notice": notice, "bulk_undo": offer}
        return render(
            request, "memory/approvals.html#results", _queue_context(request, team, **extra)
        )
    if error:
        messages.error(request, error)
    else:
        messages.success(request, notice)
        _remember(request, offer)
    return _back_to_queue(request, team)


@require_POST
@login_required
def undo_bulk(request: AppRequest) -> HttpResponse:
    """Take back the reviewer's own bulk decision of a moment ago: its rows wait again,
    except those changed since (the notice names them and why)."""
    team = _form_team(request)
    if isinstance(team, HttpResponse):
        return team
    require_reviewer(request, team)
    form = UndoManyForm(request.POST)
    if not form.is_valid():
        return HttpResponse("Undo needs the decision it takes back.", status=400)
    data = form.cleaned_data
    ids = [i for i in data["ids"] if is_record_id(i)]
    try:
        result = undo_many(team, ids, Actor.for_user(request.user), data["decided"], data["at"])
    except UndoRefused as exc:
        notice, error = "", exc.message
    else:
        _forget(request, ids)
        notice = (
            f"Undone: {_memories(len(result.undone))} ({_names(result.undone)}) "
            f"{'waits' if len(result.undone) == 1 else 'wait'} for approval again."
            if result.undone
            else ""
        )
        error = _refusals(result.refused)
    if request.htmx:
        extra = {"bulk_notice": notice, "bulk_error": error}
        return render(
            request, "memory/approvals.html#results", _queue_context(request, team, **extra)
        )
    if notice:
        messages.success(request, notice)
    if error:
        messages.warning(request, error)
    return _back_to_queue(request, team)


def _refusals(refused: dict[str, UndoRefused]) -> str:
    """Why some rows of a bulk undo still stand, bounded like the notice's names."""
    if not refused:
        return ""
    ids = list(refused)
    first = refused[ids[0]].message
    return f"{_memories(len(ids))} could not be undone ({_names(ids)}): {first}" + (
        " (and the like for the others)" if len(ids) > 1 else ""
    )


def _page_decision(
    request: AppRequest,
    record_id: str,
    act: Callable[..., Decided | AlreadyDecided | AddressTaken | None],
    only: str,
    done: str,
) -> HttpResponse:
    """A reviewer's revoke or reopen from a memory's page: the record must be the current
    team's, the reason short enough; the page says what happened (or why nothing did)."""
    team = _form_team(request, queue_page=False)
    if isinstance(team, HttpResponse):
        return team
    record = get_record_for_user(request, record_id)
    require_reviewer(request, team)
    form = ReasonForm(request.POST)
    if not form.is_valid():
        return HttpResponse("The reason is too long.", status=400)
    actor = Actor.for_user(request.user)
    result = act(record.pk, actor, form.cleaned_data["reason"], team=team)
    if isinstance(result, AddressTaken):
        messages.warning(request, result.notice)
    elif isinstance(result, AlreadyDecided):
        messages.warning(request, f"{only} {result.notice}")
    else:
        messages.success(request, done.format(actor=actor.label))
    detail = reverse("memory-detail", args=[record.pk])
    return redirect(f"{detail}?{urlencode({'team': team.slug})}")


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


@require_http_methods(["GET", "POST"])
@login_required
def revoke_one(request: AppRequest, record_id: str) -> HttpResponse:
    """Take a composed memory out of the prompt (its status becomes ``revoked``), from a
    confirmation page that shows what leaves the prompt and what, if anything, takes
    its place. Only a post of that page (``confirm``) revokes; any other post or a GET
    shows the page and changes nothing."""
    if request.method == "GET":
        record = get_record_for_user(request, record_id)
        require_reviewer(request, require_team(request))
        return _confirm_revoke(request, record, "")
    team = _form_team(request, queue_page=False)
    if isinstance(team, HttpResponse):
        return team
    record = get_record_for_user(request, record_id)
    require_reviewer(request, team)
    form = ConfirmForm(request.POST)
    if not form.is_valid():
        return HttpResponse("The reason is too long.", status=400)
    note = form.cleaned_data["reason"]
    if not form.cleaned_data["confirm"]:
        return _confirm_revoke(request, record, note)
    preview = revoke_preview(record)
    actor = Actor.for_user(request.user)
    result = revoke(record.pk, actor, note, team=team)
    if isinstance(result, AlreadyDecided):
        messages.warning(request, f"Only an approved memory can be revoked. {result.notice}")
    elif result is not None:
        what = named(record.label, record.content)
        said = " ".join(preview.sentences) if preview.withdrawal.composed else ""
        messages.success(request, f"Revoked by {actor.label}: {what} left the prompt. {said}")
    detail = reverse("memory-detail", args=[record.pk])
    return redirect(f"{detail}?{urlencode({'team': team.slug})}")


def _confirm_revoke(request: AppRequest, record: MemoryRecord, note: str) -> HttpResponse:
    """The confirmation page: what revoking would do now, and the form that does it."""
    promotion = getattr(record, "promotion", None)
    approved = promotion is not None and promotion.status == PromotionStatus.APPROVED
    preview = revoke_preview(record) if approved else None
    context = {
        "record": record,
        "agent": record.agent,
        "what": named(record.label, record.content),
        "preview": preview,
        "approved": approved,
        "reason": note,
        "nav": "memories",
    }
    return render(request, "memory/revoke_confirm.html", context)
