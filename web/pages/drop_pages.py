"""The routing report's drops (SPEC §5.6, §9): every memory left out of the prompt, by
reason, each saying in words what keeps it out.

The lens shows each reason's first ``DROPS_SHOWN`` drops with the group's count and a
link to the group's own pages, which list every drop of that reason, ``DROPS_SHOWN`` a
page. Only the drops shown are explained and their briefs read, so a page costs the
same queries and about the same time for an agent with ten memories or ten thousand.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import BadRequest
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_GET

from lens.agents import AgentNotFound
from lens.models import Agent
from memory.as_of import compose_as_of
from memory.composed import current_composition
from memory.core.composition import Composition
from memory.core.deliveries import parse_moment
from memory.core.explain import Explanation, Facts, explain, group_title, tone_of
from memory.core.report import DROP_REASONS
from memory.explain import explain_agent
from memory.queries import record_briefs
from web.pages.lens_markup import drop_items
from web.pages.toolkit import AppRequest, get_agent_for_user

# Drops of one reason the lens shows before linking to the rest; also a group page's size.
DROPS_SHOWN = 100


def drops_by_reason(composition: Composition) -> dict[str, list[str]]:
    """The ids of the drops of each reason, in the report's order of reasons and of
    drops within a reason."""
    grouped: dict[str, list[str]] = defaultdict(list)
    for drop in composition.report.drops:
        grouped[drop.reason].append(drop.memory_id)
    return {reason: grouped[reason] for reason in DROP_REASONS if grouped.get(reason)}


def shown_drops(grouped: dict[str, list[str]]) -> list[str]:
    """The ids the lens shows: each group's first ``DROPS_SHOWN``."""
    return [memory_id for ids in grouped.values() for memory_id in ids[:DROPS_SHOWN]]


def drop_groups(
    agent: Agent,
    composition: Composition,
    grouped: dict[str, list[str]],
    briefs: dict[str, Any],
    moment: datetime | None = None,
) -> list[dict[str, Any]]:
    """The lens's drops panel: each group's first ``DROPS_SHOWN`` drops in words, its
    count and, past them, a link to the group's pages (a fixed number of queries)."""
    explained = _explained(agent, composition, grouped, shown_drops(grouped), moment is None)
    groups = []
    for reason, ids in grouped.items():
        shown = ids[:DROPS_SHOWN]
        groups.append(
            {
                **_group_head(reason, len(ids)),
                "items": drop_items(reason, [explained[i] for i in shown], briefs),
                "hidden": len(ids) - len(shown),
                "shown": f"{len(shown):,}",
                "rest_url": group_url(agent, reason, moment),
            }
        )
    return groups


def group_url(agent: Agent, reason: str, moment: datetime | None = None, page: int = 1) -> str:
    """The address of a drop group's page (``page`` 1 unless given)."""
    url = reverse("agent-drops", args=[agent.slug, reason])
    query = {} if moment is None else {"as_of": moment.isoformat()}
    if page > 1:
        query["page"] = str(page)
    return f"{url}?{urlencode(query)}" if query else url


# Drops a reviewer can act on: their group starts open on the lens, whatever its place.
ACTIONABLE = frozenset({"awaiting-approval"})


def _group_head(reason: str, count: int) -> dict[str, Any]:
    return {
        "reason": reason,
        "actionable": reason in ACTIONABLE,
        "title": group_title(reason),
        "tone": tone_of(reason),
        "count": f"{count:,}",
    }


def _explained(
    agent: Agent,
    composition: Composition,
    grouped: dict[str, list[str]],
    memory_ids: Iterable[str],
    today: bool,
) -> dict[str, Explanation]:
    """The words for each of ``memory_ids`` (drops of ``composition``). A past
    composition (``today`` false) says each reason alone: the facts behind the words
    (who decided, what holds the address) are today's."""
    ids = list(memory_ids)
    found = explain_agent(agent, composition, ids) if today and ids else {}
    reason_of = {memory_id: reason for reason, group in grouped.items() for memory_id in group}
    explained = {}
    for memory_id in ids:
        reason = reason_of[memory_id]
        words = found.get(memory_id)
        if words is None or words.reason != reason:
            # Every drop has a promotion row; without one, say the reason all the same.
            words = explain(Facts(memory_id, reason=reason, agent=agent.slug))
        explained[memory_id] = words
    return explained


@require_GET
@login_required
def drop_group(request: AppRequest, slug: str, reason: str) -> HttpResponse:
    """Every drop of one reason, ``DROPS_SHOWN`` a page, each in words as on the lens;
    now, or as the agent stood at ``?as_of=``."""
    agent = get_agent_for_user(request, slug)
    if reason not in DROP_REASONS:
        raise Http404("No such drop reason")
    asked = request.GET.get("as_of") or ""
    moment = parse_moment(asked) if asked else None
    if asked and moment is None:
        raise BadRequest(f"{asked!r} is not an ISO 8601 date and time.")
    if moment is None:
        composition = current_composition(agent)
    else:
        try:
            composition = compose_as_of(agent, moment)
        except AgentNotFound:
            raise BadRequest("The agent did not exist yet at that time.") from None
    grouped = drops_by_reason(composition)
    ids = grouped.get(reason, [])
    page = Paginator(ids, DROPS_SHOWN).get_page(request.GET.get("page"))
    shown = list(page.object_list)
    explained = _explained(agent, composition, grouped, shown, moment is None)
    briefs = record_briefs(agent, shown)
    context = {
        "agent": agent,
        "as_of": moment,
        "group": _group_head(reason, len(ids)),
        "items": drop_items(reason, [explained[i] for i in shown], briefs),
        "page": page,
        "first": page.start_index(),
        "last": page.end_index(),
        "nav": "agents",
    }
    return render(request, "lens/agent_drops.html", context)
