"""``/audit/``: the team's audit log for people (SPEC §15), newest first, 50 a page,
filtered by agent, actor, action and date, each event linked to what it names."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any

from django.contrib.auth.decorators import login_required
from django.db.models import QuerySet
from django.http import HttpResponse
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET

from lens.core.audit_actions import ACTIONS
from lens.models import Agent, AuditEvent, Team
from web.pages.bounded_pager import bounded_page
from web.pages.toolkit import PAGE_SIZE, AppRequest, current_team, no_team_page, render_list

# What each action is called on the page.
ACTION_WORDS = {
    "agent.created": "Agent created",
    "agent.revised": "Agent revised",
    "agent.deleted": "Agent deleted",
    "proposal.created": "Change proposed",
    "proposal.published": "Proposal published",
    "proposal.rejected": "Proposal rejected",
    "proposal.stale": "Proposal went stale",
    "proposal.withdrawn": "Proposal withdrawn",
    "memory.saved": "Memory saved",
    "memory.approved": "Memory approved",
    "memory.rejected": "Memory rejected",
    "memory.revoked": "Memory revoked",
    "memory.reopened": "Memory reopened",
    "memory.superseded": "Memory superseded",
    "memory.erased": "Memory erased",
    "delivery.recorded": "Prompt delivered",
    "delivery.pruned": "Old deliveries removed",
    "kv.written": "Key written",
    "kv.deleted": "Key deleted",
    "token.issued": "Token issued",
    "token.revoked": "Token revoked",
    "member.added": "Member added",
    "member.removed": "Member removed",
    "webhook.created": "Webhook created",
    "webhook.deleted": "Webhook deleted",
    "webhook.rotated": "Webhook secret rotated",
}
# A filter value longer than any real one names nothing: it is not sent to the database.
_FILTER_MAX = 300


@dataclass(frozen=True)
class Filters:
    agent: str
    actor: str
    action: str
    since: date | None
    until: date | None
    problems: list[str]


def _day(value: str, name: str, problems: list[str]) -> date | None:
    if not value:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        problems.append(f"{name} is not a date (YYYY-MM-DD): {value[:40]!r}; it is ignored")
        return None


def filters_of(request: AppRequest) -> Filters:
    problems: list[str] = []
    action = request.GET.get("action", "")
    if action and action not in ACTIONS:
        problems.append(f"{action[:60]!r} is not an action; it is ignored")
        action = ""
    return Filters(
        agent=request.GET.get("agent", "")[:_FILTER_MAX],
        actor=request.GET.get("actor", "")[:_FILTER_MAX],
        action=action,
        since=_day(request.GET.get("since", ""), "From", problems),
        until=_day(request.GET.get("until", ""), "Until", problems),
        problems=problems,
    )


def filtered(team: Team, filters: Filters) -> QuerySet[AuditEvent]:
    """``team``'s events, newest first; each filter an indexed condition."""
    rows = AuditEvent.objects.filter(team=team)
    if filters.agent:
        rows = rows.filter(agent=filters.agent)
    if filters.actor:
        rows = rows.filter(actor=filters.actor)
    if filters.action:
        rows = rows.filter(action=filters.action)
    zone = timezone.get_current_timezone()
    if filters.since is not None:
        rows = rows.filter(at__gte=datetime.combine(filters.since, time.min, zone))
    if filters.until is not None:
        rows = rows.filter(
            at__lt=datetime.combine(filters.until + timedelta(days=1), time.min, zone)
        )
    return rows.order_by("-seq")


def object_link(event: AuditEvent) -> str | None:
    """Where the event's object is shown, when it has a page."""
    kind, ident, details = event.object_type, event.object_id, event.details
    if kind == "agent" and event.action == "agent.deleted":
        return None
    if kind == "agent" and isinstance(details.get("revision"), int):
        return reverse("agent-revision", args=[ident, details["revision"]])
    if kind == "agent":
        return reverse("agent-lens", args=[ident])
    if kind == "proposal" and ident.isdigit():
        return reverse("proposal", args=[int(ident)])
    if kind == "memory":
        return reverse("memory-detail", args=[ident])
    if kind == "delivery":
        return reverse("delivery-detail", args=[ident])
    if kind == "kv":
        return reverse("kv-detail", args=[ident])
    if kind == "webhook" and event.action != "webhook.deleted" and ident.isdigit():
        return reverse("webhook-detail", args=[int(ident)])
    return None


_HASH = re.compile(r"[0-9a-f]{64}")


def _detail_words(details: dict[str, Any]) -> list[tuple[str, str, str]]:
    """Each detail as (name, shown, whole): hashes shortened (the whole in a title),
    empty and false ones left out (a bulk flag that is off says nothing)."""
    shown = []
    for name, value in details.items():
        if value in (None, "", False):
            continue
        whole = "yes" if value is True else str(value)
        short = whole[:12] + "…" if _HASH.fullmatch(whole) else whole
        shown.append((name.replace("_", " "), short, whole))
    return shown


@require_GET
@login_required
def audit_log(request: AppRequest) -> HttpResponse:
    team = current_team(request)
    if team is None:
        return no_team_page(request, "Audit log", "audit")
    filters = filters_of(request)
    # A team's log grows without end: the pager counts 10,000 events at most.
    page = bounded_page(filtered(team, filters), request.GET.get("page"), PAGE_SIZE)
    rows = [
        {
            "event": event,
            "words": ACTION_WORDS.get(event.action, event.action),
            "link": object_link(event),
            "details": _detail_words(event.details),
        }
        for event in page.object_list
    ]
    context = {
        "page": page,
        "rows": rows,
        "filters": filters,
        "actions": sorted(ACTION_WORDS.items()),
        "agents": Agent.objects.filter(team=team).order_by("slug").values_list("slug", flat=True),
        "nav": "audit",
    }
    return render_list(request, "lens/audit_log.html", context)
