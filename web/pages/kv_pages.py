"""Key/value store pages: keys by prefix, and one key's value, history, diffs and edits."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.cache import patch_vary_headers
from django.utils.http import content_disposition_header, urlencode
from django.views.decorators.http import require_GET, require_http_methods

from kvstore import history, store
from kvstore.core.keys import PAYLOAD_MAX_RUNES, key_problem
from kvstore.models import Key, Version
from lens.actors import Actor
from lens.core.line_diffs import line_diff
from lens.models import Team
from web.pages.kv_forms import DeleteForm, WriteForm
from web.pages.toolkit import (
    PAGE_SIZE,
    AppRequest,
    WrongTeam,
    current_team,
    get_key_for_user,
    no_team_page,
    render_list,
    require_team,
    use_form_team,
)


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


# Versions are stored as 32-bit integers: anything larger names no version (and would
# overflow the database's integer on the way in).
VERSION_MAX = 2**31 - 1
# The htmx target the version pickers swap: the comparison alone.
DIFF_TARGET = "diff-panel"


def _version_number(value: str) -> int | None:
    """``value`` as a version number, or None when it cannot be one."""
    if not (value.isascii() and value.isdigit()) or len(value) > len(str(VERSION_MAX)):
        return None
    number = int(value)
    return number if 1 <= number <= VERSION_MAX else None


def _detail_url(key: str, **params: str | int | None) -> str:
    query = urlencode({k: v for k, v in params.items() if v is not None and v != ""})
    return reverse("kv-detail", args=[key]) + (f"?{query}" if query else "")


@require_http_methods(["GET", "POST"])
@login_required
def key_detail(request: AppRequest, key: str) -> HttpResponse:
    if request.method == "POST":
        # The key is looked up in the team the form was rendered for, never in the one
        # another tab switched the session to since.
        try:
            use_form_team(request)
        except WrongTeam as exc:
            return _wrong_team(request, key, exc.message)
    try:
        row = get_key_for_user(request, key)
    except Http404:
        writing = request.method == "POST" and request.POST.get("action") == "write"
        if writing and not key_problem(key):
            return _write_to_missing(request, key)
        raise
    team = require_team(request)  # the key's: a link to it switches to its team
    if request.method == "POST":
        return _post(request, team, row)
    context = _detail_context(request, team, row)
    status = 400 if context["diff_malformed"] else 200
    # The version pickers ask for the comparison alone (htmx); restoring a pushed
    # address it has no snapshot of, htmx needs the whole page.
    if request.htmx.target == DIFF_TARGET and not request.htmx.history_restore_request:
        response = render(request, "kvstore/key_detail.html#diff", context, status=status)
    else:
        response = render(request, "kvstore/key_detail.html", context, status=status)
    patch_vary_headers(response, ("HX-Request", "HX-Target"))
    return response


@require_GET
@login_required
def key_raw(request: AppRequest, key: str) -> HttpResponse:
    """One version's payload as a text file: for versions too large to compare inline."""
    row = get_key_for_user(request, key)
    team = require_team(request)  # the key's: a link to it switches to its team
    number = _version_number(request.GET.get("version", ""))
    if number is None:
        raise Http404("No such version")
    try:
        value = store.read(team, row.key, number)
    except store.VersionNotFound:
        raise Http404("No such version") from None
    response = HttpResponse(value.payload, content_type="text/plain; charset=utf-8")
    response["Content-Disposition"] = content_disposition_header(
        as_attachment=True, filename=f"{row.key}.v{number}.txt"
    )
    return response


def _detail_context(request: AppRequest, team: Team, row: Key, **extra: Any) -> dict[str, Any]:
    asked = request.GET.get("version", "")
    wanted = _version_number(asked) if asked else None
    if asked and wanted is None:
        raise Http404("No such version")
    try:
        shown = store.read(team, row.key, wanted)
    except store.VersionNotFound:
        raise Http404("No such version") from None
    versions = Version.objects.filter(key=row).order_by("-version")
    page = Paginator(versions.values("version", "written_at", "runes", "first_line"), PAGE_SIZE)
    listed = page.get_page(request.GET.get("page"))
    changes = history.changes(row, [v["version"] for v in listed.object_list])
    entries = [(v, changes.get(v["version"])) for v in listed.object_list]
    comparison = _comparison(request, team, row, shown)
    context = {
        "row": row,
        "shown": shown,
        "history": listed,
        "entries": entries,
        "choices": history.choices(row, comparison["diff_from"], comparison["diff_to"]),
        **comparison,
        "draft": shown.payload,
        "if_version": shown.version,
        "limit": PAYLOAD_MAX_RUNES,
        "nav": "kv",
        "diff_target": DIFF_TARGET,
    }
    context.update(extra)
    return context


def _comparison(request: AppRequest, team: Team, row: Key, shown: store.Value) -> dict[str, Any]:
    """The two versions the pickers name (by default the shown one and the one before)
    and their line diff, or why they cannot be compared.
    """
    chosen = {"from": shown.version - 1, "to": shown.version}
    problems = []
    for name in chosen:
        given = request.GET.get(name, "")
        if not given:
            continue
        number = _version_number(given)
        if number is None:
            problems.append(
                f"“{name}” must be a version number from 1 to {row.latest_version}, "
                f"not “{_shown_back(given)}”."
            )
        else:
            chosen[name] = number
    answer: dict[str, Any] = {
        "diff_from": chosen["from"],
        "diff_to": chosen["to"],
        "diff": None,
        "diff_error": " ".join(problems) or None,
        "diff_malformed": bool(problems),
    }
    if problems or chosen["from"] < 1:
        return answer
    try:
        old, new = (_read(team, row, number, shown) for number in (chosen["from"], chosen["to"]))
    except store.VersionNotFound as exc:
        answer["diff_error"] = exc.message
        return answer
    raw = reverse("kv-raw", args=[row.key])
    answer.update(
        diff=line_diff(old.payload, new.payload),
        diff_old_label=f"v{old.version}",
        diff_new_label=f"v{new.version}",
        diff_old_raw=f"{raw}?version={old.version}",
        diff_new_raw=f"{raw}?version={new.version}",
        diff_api_path=f"/api/kv/{row.key}/diff?from={old.version}&to={new.version}",
    )
    return answer


def _shown_back(given: str) -> str:
    """What was typed, short and printable, to quote in an error message."""
    return "".join(c if c.isprintable() else "\ufffd" for c in given[:40])


def _read(team: Team, row: Key, number: int, shown: store.Value) -> store.Value:
    return shown if number == shown.version else store.read(team, row.key, number)


def _wrong_team(request: AppRequest, key: str, message: str) -> HttpResponse:
    """A form that names no team of the user: nothing is written. The page comes back for
    the team the user works in now (when it has the key), the typed text kept."""
    team = require_team(request)
    try:
        row = get_key_for_user(request, key)
    except Http404:
        return HttpResponse(message, status=400, content_type="text/plain; charset=utf-8")
    extra: dict[str, Any] = {"write_error": message}
    if request.POST.get("action") == "write":
        extra["draft"] = request.POST.get("payload", "").replace("\r\n", "\n")
    context = _detail_context(request, team, row, **extra)
    return render(request, "kvstore/key_detail.html", context, status=400)


def _post(request: AppRequest, team: Team, row: Key) -> HttpResponse:
    key = row.key
    action = request.POST.get("action")
    if action == "delete":
        delete = DeleteForm(key, request.POST)
        if not delete.is_valid():
            messages.error(request, str(delete.errors["confirm"][0]))
            return redirect(_detail_url(key, team=team.slug))
        count = store.delete(team, key, Actor.for_user(request.user))
        messages.success(
            request, f"Deleted {key} and its {count} version{'s' if count != 1 else ''}."
        )
        return redirect(reverse("kv-list") + "?" + urlencode({"team": team.slug}))
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
        written = store.write(team, key, payload, if_version, Actor.for_user(request.user))
    except (store.VersionConflict, store.PayloadTooLarge) as exc:
        extra: dict[str, Any] = {"draft": payload, "write_error": exc.message}
        if isinstance(exc, store.VersionConflict):
            latest = store.read(team, key)
            extra.update(
                conflict_version=latest.version,
                conflict_diff=line_diff(latest.payload, payload),
                conflict_label=f"v{latest.version}",
                # Saving again now is a deliberate overwrite of the version they saw.
                if_version=latest.version,
            )
        else:
            extra["if_version"] = if_version
        context = _detail_context(request, team, store.get_key(team, key), **extra)
        status = 409 if "conflict_version" in extra else 413
        return render(request, "kvstore/key_detail.html", context, status=status)
    messages.success(request, f"Saved version {written.version}.")
    # Back to the key in the team it was written in, whatever another tab chose since.
    return redirect(_detail_url(key, team=team.slug))


def _write_to_missing(request: AppRequest, key: str) -> HttpResponse:
    """A write to a key that does not exist (here, most likely deleted while someone
    edited it). Nothing is created — a missing key stays a 404 — but the text that was
    typed is shown back instead of being lost.
    """
    payload = request.POST.get("payload", "").replace("\r\n", "\n")
    context = {"key": key, "draft": payload, "nav": "kv"}
    return render(request, "kvstore/key_gone.html", context, status=404)
