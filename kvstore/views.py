"""Key/value store pages: keys by prefix, and one key's value, history, diffs and edits."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods
from django.views.decorators.vary import vary_on_headers

from kvstore import store
from kvstore.keys import PAYLOAD_MAX_RUNES, key_problem, unified_diff
from kvstore.models import Version
from lens.models import Team
from lens.teams import require_team

PAGE_SIZE = 50
HISTORY_PAGE = 50


@require_GET
@login_required
# The same URL answers a fragment or a page depending on HX-Request; without Vary the
# browser's back button can bring back a cached bare fragment as the whole page.
@vary_on_headers("HX-Request")
def key_list(request: HttpRequest) -> HttpResponse:
    team = require_team(request)
    prefix = request.GET.get("prefix", "")
    page = Paginator(store.keys_with_prefix(team, prefix), PAGE_SIZE).get_page(
        request.GET.get("page")
    )
    context = {"page": page, "prefix": prefix, "nav": "kv"}
    # htmx restoring a pushed URL it has no snapshot of swaps the answer into <body>.
    htmx = request.htmx  # type: ignore[attr-defined]
    if htmx and not htmx.history_restore_request:
        return render(request, "kvstore/key_list.html#results", context)
    return render(request, "kvstore/key_list.html", context)


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value else None
    except ValueError:
        return None


def _detail_url(key: str, **params: object) -> str:
    query = urlencode({k: v for k, v in params.items() if v not in (None, "")})
    return reverse("kv-detail", args=[key]) + (f"?{query}" if query else "")


@require_http_methods(["GET", "POST"])
@login_required
def key_detail(request: HttpRequest, key: str) -> HttpResponse:
    team = require_team(request)
    if key_problem(key):
        raise Http404("Not a valid key")
    try:
        row = store.get_key(team, key)
    except store.KeyNotFound:
        if request.method == "POST" and request.POST.get("action") == "write":
            return _write_to_missing(request, key)
        raise Http404("No such key") from None
    if request.method == "POST":
        return _post(request, team, row.key)
    return render(request, "kvstore/key_detail.html", _detail_context(request, team, row))


def _detail_context(request: HttpRequest, team: Team, row: Any, **extra: Any) -> dict[str, Any]:
    wanted = _int(request.GET.get("version"))
    try:
        shown = store.read(team, row.key, wanted)
    except store.VersionNotFound:
        raise Http404("No such version") from None
    versions = Version.objects.filter(key=row).order_by("-version")
    history = Paginator(
        versions.values("version", "written_at", "runes", "first_line"), HISTORY_PAGE
    ).get_page(request.GET.get("page"))
    diff_from, diff_to = _int(request.GET.get("from")), _int(request.GET.get("to"))
    diff_text, diff_error = None, None
    if diff_from and diff_to:
        try:
            old, new = store.diff(team, row.key, diff_from, diff_to)
            diff_text = unified_diff(
                old.payload, new.payload, f"{row.key}@{diff_from}", f"{row.key}@{diff_to}"
            )
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


def _post(request: HttpRequest, team: Team, key: str) -> HttpResponse:
    action = request.POST.get("action")
    if action == "delete":
        if request.POST.get("confirm") != key:
            messages.error(request, "Type the key's name to confirm deleting it.")
            return redirect(_detail_url(key))
        count = store.delete(team, key)
        messages.success(
            request, f"Deleted {key} and its {count} version{'s' if count != 1 else ''}."
        )
        return redirect("kv-list")
    if action != "write":
        return HttpResponse("action must be write or delete", status=400)
    payload = request.POST.get("payload", "").replace("\r\n", "\n")
    if_version = _int(request.POST.get("if_version"))
    try:
        written = store.write(team, key, payload, if_version)
    except (store.VersionConflict, store.PayloadTooLarge) as exc:
        row = store.get_key(team, key)
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
        context = _detail_context(request, team, row, **extra)
        return render(
            request,
            "kvstore/key_detail.html",
            context,
            status=409 if "conflict_version" in extra else 413,
        )
    messages.success(request, f"Saved version {written.version}.")
    return redirect(_detail_url(key))


def _write_to_missing(request: HttpRequest, key: str) -> HttpResponse:
    """A write to a key that does not exist (here, most likely deleted while someone
    edited it). Nothing is created — a missing key stays a 404 — but the text that was
    typed is shown back instead of being lost.
    """
    payload = request.POST.get("payload", "").replace("\r\n", "\n")
    context = {"key": key, "draft": payload, "nav": "kv"}
    return render(request, "kvstore/key_gone.html", context, status=404)
