"""Key/value store pages: keys by prefix, and one key's value, history, diffs and edits."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_GET, require_http_methods

from kvstore import store
from kvstore.core.keys import PAYLOAD_MAX_RUNES, key_problem
from kvstore.forms import DeleteForm, WriteForm
from kvstore.models import Key, Version
from lens.core.diffs import unified_diff
from lens.http import (
    PAGE_SIZE,
    AppRequest,
    current_team,
    get_key_for_user,
    no_team_page,
    render_list,
    require_team,
)
from lens.models import Team


@require_GET
@login_required
def key_list(request: AppRequest) -> HttpResponse:
    team = current_team(request)
    if team is None:
        return no_team_page(request, "Key/value store", "kv")
    prefix = request.GET.get("prefix", "")
    page = Paginator(store.keys_with_prefix(team, prefix), PAGE_SIZE).get_page(
        request.GET.get("page")
    )
    context = {"page": page, "prefix": prefix, "nav": "kv"}
    return render_list(request, "kvstore/key_list.html", context)


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value else None
    except ValueError:
        return None


def _detail_url(key: str, **params: str | int | None) -> str:
    query = urlencode({k: v for k, v in params.items() if v is not None and v != ""})
    return reverse("kv-detail", args=[key]) + (f"?{query}" if query else "")


@require_http_methods(["GET", "POST"])
@login_required
def key_detail(request: AppRequest, key: str) -> HttpResponse:
    team = require_team(request)
    try:
        row = get_key_for_user(request, key)
    except Http404:
        writing = request.method == "POST" and request.POST.get("action") == "write"
        if writing and not key_problem(key):
            return _write_to_missing(request, key)
        raise
    if request.method == "POST":
        return _post(request, team, row)
    return render(request, "kvstore/key_detail.html", _detail_context(request, team, row))


def _detail_context(request: AppRequest, team: Team, row: Key, **extra: Any) -> dict[str, Any]:
    wanted = _int(request.GET.get("version"))
    try:
        shown = store.read(team, row.key, wanted)
    except store.VersionNotFound:
        raise Http404("No such version") from None
    versions = Version.objects.filter(key=row).order_by("-version")
    history = Paginator(
        versions.values("version", "written_at", "runes", "first_line"), PAGE_SIZE
    ).get_page(request.GET.get("page"))
    diff_from, diff_to = _int(request.GET.get("from")), _int(request.GET.get("to"))
    diff_text, diff_error = None, None
    if diff_from and diff_to:
        try:
            diff_text = store.diff(team, row.key, diff_from, diff_to).text
        except store.VersionNotFound as exc:
            diff_error = exc.message
    context = {
        "row": row,
        "shown": shown,
        "history": history,
        "diff_from": diff_from or max(shown.version - 1, 1),
        "diff_to": diff_to or shown.version,
        "diff_text": diff_text,
        "diff_error": diff_error,
        "draft": shown.payload,
        "if_version": shown.version,
        "limit": PAYLOAD_MAX_RUNES,
        "nav": "kv",
    }
    context.update(extra)
    return context


def _post(request: AppRequest, team: Team, row: Key) -> HttpResponse:
    key = row.key
    action = request.POST.get("action")
    if action == "delete":
        delete = DeleteForm(key, request.POST)
        if not delete.is_valid():
            messages.error(request, str(delete.errors["confirm"][0]))
            return redirect(_detail_url(key))
        count = store.delete(team, key)
        messages.success(
            request, f"Deleted {key} and its {count} version{'s' if count != 1 else ''}."
        )
        return redirect("kv-list")
    if action != "write":
        return HttpResponse("action must be write or delete", status=400)
    form = WriteForm(request.POST)
    if not form.is_valid():
        error = next(str(e) for errors in form.errors.values() for e in errors)
        context = _detail_context(
            request, team, row, draft=request.POST.get("payload", ""), write_error=error
        )
        return render(request, "kvstore/key_detail.html", context, status=400)
    payload, if_version = form.cleaned_data["payload"], form.cleaned_data["if_version"]
    try:
        written = store.write(team, key, payload, if_version)
    except (store.VersionConflict, store.PayloadTooLarge) as exc:
        extra: dict[str, Any] = {"draft": payload, "write_error": exc.message}
        if isinstance(exc, store.VersionConflict):
            latest = store.read(team, key)
            extra.update(
                conflict_version=latest.version,
                conflict_diff=unified_diff(
                    latest.payload, payload, f"{key}@{latest.version}", f"{key} (your edit)"
                ),
                # Saving again now is a deliberate overwrite of the version they saw.
                if_version=latest.version,
            )
        else:
            extra["if_version"] = if_version
        context = _detail_context(request, team, store.get_key(team, key), **extra)
        status = 409 if "conflict_version" in extra else 413
        return render(request, "kvstore/key_detail.html", context, status=status)
    messages.success(request, f"Saved version {written.version}.")
    return redirect(_detail_url(key))


def _write_to_missing(request: AppRequest, key: str) -> HttpResponse:
    """A write to a key that does not exist (here, most likely deleted while someone
    edited it). Nothing is created — a missing key stays a 404 — but the text that was
    typed is shown back instead of being lost.
    """
    payload = request.POST.get("payload", "").replace("\r\n", "\n")
    context = {"key": key, "draft": payload, "nav": "kv"}
    return render(request, "kvstore/key_gone.html", context, status=404)
