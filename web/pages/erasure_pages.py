"""Erasing a memory from its page (SPEC §15): a reviewer of its team confirms by typing
the memory's id and giving a reason; nothing else erases from the browser."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_http_methods

from lens.actors import Actor
from memory.deliveries.ledger import shaped_by
from memory.erasure import REASON_MAX, AlreadyErased, erase_memory
from memory.models import CompositionMemory, MemoryRecord
from web.pages.approval_pages import require_reviewer
from web.pages.memory_forms import EraseForm
from web.pages.toolkit import (
    AppRequest,
    WrongTeam,
    get_record_for_user,
    require_team,
    use_form_team,
)


@require_http_methods(["GET", "POST"])
@login_required
def erase_one(request: AppRequest, record_id: str) -> HttpResponse:
    """The confirmation page (GET), and the erasure once confirmed (POST). A post whose
    typed id or reason does not do shows the page again with why, and erases nothing."""
    if request.method == "GET":
        record = get_record_for_user(request, record_id)
        require_reviewer(request, require_team(request))
        return _confirm(request, record, EraseForm(record_id=record.pk))
    try:
        team = use_form_team(request)
    except WrongTeam as exc:
        return HttpResponse(exc.message, status=400, content_type="text/plain; charset=utf-8")
    record = get_record_for_user(request, record_id)
    require_reviewer(request, team)
    form = EraseForm(request.POST, record_id=record.pk)
    if record.erased:
        messages.warning(request, f"Memory {record.pk} was already erased; nothing was changed.")
        return _back(record.pk, team.slug)
    if not form.is_valid():
        return _confirm(request, record, form, status=400)
    actor = Actor.for_user(request.user)
    try:
        # On PostgreSQL the VACUUM of what it touched runs on the worker: a request
        # does not wait for it.
        erased = erase_memory(
            record.pk, actor, form.cleaned_data["reason"], team=team, vacuum_later=True
        )
    except AlreadyErased as exc:  # another reviewer was quicker
        messages.warning(request, exc.message)
        return _back(record.pk, team.slug)
    # Ids and counts only: a message waits in the session until it is shown.
    messages.success(
        request,
        f"Erased by {actor.label}: memory {erased.record_id}. Its content, label and tags "
        f"are gone; {_redacted(erased.compositions, erased.deliveries)}",
    )
    return _back(record.pk, team.slug)


def _redacted(compositions: int, deliveries: int) -> str:
    if not compositions:
        return "no delivered prompt held it."
    if compositions == 1:
        held = f"1 stored prompt ({deliveries} deliver{'y' if deliveries == 1 else 'ies'}) reads"
    else:
        held = f"{compositions} stored prompts ({deliveries} deliveries) read"
    return f"{held} [erased] where it was."


def _back(record_id: str, team: str) -> HttpResponse:
    detail = reverse("memory-detail", args=[record_id])
    return redirect(f"{detail}?{urlencode({'team': team})}")


def _confirm(
    request: AppRequest, record: MemoryRecord, form: EraseForm, status: int = 200
) -> HttpResponse:
    """What erasing would do, and the form that does it."""
    _shown, deliveries = shaped_by(record.agent, record.pk, 0)
    compositions = CompositionMemory.objects.filter(memory_id=record.pk).count()
    context = {
        "record": record,
        "agent": record.agent,
        "form": form,
        "deliveries": deliveries,
        "compositions": compositions,
        "reason_max": REASON_MAX,
        "nav": "memories",
    }
    return render(request, "memory/erase_confirm.html", context, status=status)
