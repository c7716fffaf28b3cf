"""Delivery pages (SPEC §11): an agent's timeline, one delivery as it was handed to the
model, and the diff between two deliveries (or a delivery and the live prompt).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth.decorators import login_required
from django.db.models import QuerySet
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import content_disposition_header, urlencode
from django.views.decorators.http import require_GET

from lens.core.change_words import in_words
from lens.core.diffs import diff_excerpt
from lens.models import Agent, Team
from lens.revisions import summaries_then
from memory.composed import current_composition
from memory.core.deliveries import Change, Comparison, label_problem, parse_moment
from memory.core.records import RECORD_ID_PATTERN, is_record_id
from memory.deliveries.fates import Fate, fates
from memory.deliveries.ledger import (
    DeliveryDiff,
    DeliveryNotFound,
    Row,
    composition_of,
    delivered_prompt,
    deliveries_of,
    delivery_diff,
    find_delivery,
    listing,
    live_diff,
    neighbours,
    recent_deliveries,
    rows_from,
)
from memory.models import Delivery, StoredComposition
from memory.queries import briefs_of
from web.costly import costly
from web.pages.bounded_pager import bounded_page
from web.pages.cache_display import (
    CacheLine,
    authored_tokens,
    cache_line,
    chart_of,
    section_titles,
)
from web.pages.lens_markup import prompt_section_items
from web.pages.toolkit import PAGE_SIZE, AppRequest, find_linked, get_agent_for_user

# The "Compare with…" field suggests the agent's newest deliveries; any id may be typed.
COMPARE_SUGGESTIONS = 20


def get_delivery_for_user(request: AppRequest, delivery_id: str) -> Delivery:
    """The delivery of the current team (or, for a link, of the user's team that has
    it: ``find_linked``); 404 for anyone else."""

    def find(team: Team) -> Delivery:
        try:
            return find_delivery(team, delivery_id)
        except DeliveryNotFound:
            raise Http404("No such delivery") from None

    return find_linked(request, "delivery", find, _holders(delivery_id), "agent__team")


def _holders(delivery_id: str) -> QuerySet[Delivery]:
    # Anything but a record id is no delivery: no query at all.
    rows = Delivery.objects.filter(pk=delivery_id)
    return rows if is_record_id(delivery_id) else rows.none()


def _filter(request: AppRequest, name: str) -> str | None:
    value = request.GET.get(name, "")
    return value if value and label_problem(value) is None else None


@dataclass(frozen=True)
class TimelineRow:
    """A timeline row: the ledger's row and its prompt-cache line (SPEC §17)."""

    delivery: Delivery
    change: Change
    cache: CacheLine | None

    @property
    def stored(self) -> StoredComposition:
        return self.delivery.composition


def _timeline_rows(agent: Agent, rows: list[Row]) -> list[TimelineRow]:
    titles = section_titles(agent)
    return [TimelineRow(r.delivery, r.change, cache_line(r.delivery, titles)) for r in rows]


@require_GET
@login_required
def timeline(request: AppRequest, slug: str) -> HttpResponse:
    """Newest first, 50 a page; ``at`` jumps to the delivery in force at that time."""
    agent = get_agent_for_user(request, slug)
    session, memory = _filter(request, "session"), _filter(request, "memory")
    at_text = request.GET.get("at", "")
    jump_error = ""
    if at_text:
        at = parse_moment(at_text)  # a datetime-local field sends no zone: UTC
        in_force = deliveries_of(agent, before=at).order_by("-delivered_at").first() if at else None
        if in_force is not None:
            return redirect("delivery-detail", delivery_id=in_force.id)
        jump_error = (
            f"No delivery at or before {at_text} UTC."
            if at
            else f"{at_text!r} is not a date and time."
        )
    queryset = deliveries_of(agent, session=session, memory=memory)
    # An agent's deliveries grow without end: the pager counts 10,000 at most, and its
    # one read of the rows (with the one after the page) gives the change columns.
    page = bounded_page(listing(queryset), request.GET.get("page"), PAGE_SIZE)
    rows = rows_from(page.fetched, PAGE_SIZE)
    context = {
        "agent": agent,
        "page": page,
        "rows": _timeline_rows(agent, rows),
        "cache_chart": chart_of(agent),
        "session": session or "",
        "memory": memory or "",
        "at": at_text,
        "jump_error": jump_error,
        "nav": "agents",
    }
    return render(request, "memory/delivery_timeline.html", context)


@require_GET
@login_required
def delivery_detail(request: AppRequest, delivery_id: str) -> HttpResponse:
    """The prompt exactly as delivered, each memory marked with what happened since."""
    return _detail_page(request, get_delivery_for_user(request, delivery_id))


def _detail_page(
    request: AppRequest, delivery: Delivery, compare_error: str = "", status: int = 200
) -> HttpResponse:
    """The delivery's page; ``compare_error`` says why "Compare with…" found nothing."""
    agent = get_agent_for_user(request, delivery.agent.slug)
    composition = composition_of(delivery.composition)
    memory_ids = sorted(delivery.composition.memory_ids.split())
    live = current_composition(agent)
    live_ids = frozenset(mid for s in live.prompt.sections for mid in s.memory_ids)
    fate_of = fates(memory_ids, live_ids)
    newer = [fate.newer for fate in fate_of.values() if fate.newer]
    briefs = briefs_of([*memory_ids, *newer])  # one query: the memories and successors
    memories = [
        {
            "id": mid,
            "brief": briefs.get(mid),
            "fate": fate_of[mid],
            "newer_brief": briefs.get(fate_of[mid].newer),
        }
        for mid in memory_ids
    ]
    tip_of = {mid: _tip(mid, briefs.get(mid), fate_of[mid]) for mid in memory_ids}
    context = {
        "agent": agent,
        "delivery": delivery,
        "stored": delivery.composition,
        "composition": composition,
        "sections": prompt_section_items(
            composition.prompt.sections,
            lambda ids: "\n".join(tip_of.get(mid, f"memory {mid}") for mid in ids),
        ),
        "memories": memories,
        "cache": cache_line(
            delivery, section_titles(agent), authored_tokens(composition.prompt.sections)
        ),
        "live_differs": live.prompt.text != composition.prompt.text,
        **_around(delivery, agent),
        "compare_error": compare_error,
        "nav": "agents",
    }
    return render(request, "memory/delivery_detail.html", context, status=status)


def _around(delivery: Delivery, agent: Agent) -> dict[str, Any]:
    """The delivery's neighbours in its agent's timeline, and what "Compare with…"
    suggests: the agent's newest deliveries but this one (three queries in all)."""
    before, after = neighbours(delivery)
    suggestions = [
        d for d in recent_deliveries(agent, COMPARE_SUGGESTIONS + 1) if d.pk != delivery.pk
    ]
    return {
        "previous": before,
        "next": after,
        "compare_suggestions": suggestions[:COMPARE_SUGGESTIONS],
        # The HTML pattern attribute anchors itself; the id rule without its anchors.
        "delivery_id_pattern": RECORD_ID_PATTERN.removeprefix("^").removesuffix("$"),
    }


def _file_name(delivery: Delivery) -> str:
    # Agent slugs and delivery ids are [a-z0-9-]: a plain ASCII name, nothing to escape.
    return f"{delivery.agent.slug}-{delivery.id}.txt"


def _text_download(text: str, file_name: str) -> HttpResponse:
    response = HttpResponse(text.encode("utf-8"), content_type="text/plain; charset=utf-8")
    response["Content-Disposition"] = content_disposition_header(True, file_name)
    return response


@require_GET
@login_required
def delivery_prompt(request: AppRequest, delivery_id: str) -> HttpResponse:
    """The delivered prompt as a UTF-8 text file, byte for byte what the model got: its
    SHA-256 is the one the page and the API show (unless it was redacted since: then
    the lines of erased memories read ``[erased]`` and the page says so)."""
    delivery = get_delivery_for_user(request, delivery_id)
    return _text_download(delivered_prompt(delivery), _file_name(delivery))


@require_GET
@login_required
def delivery_prompt_sha256(request: AppRequest, delivery_id: str) -> HttpResponse:
    """The prompt's SHA-256 in ``sha256sum`` format, naming the prompt's file: saved next
    to it, ``sha256sum -c`` checks the download."""
    delivery = get_delivery_for_user(request, delivery_id)
    name = _file_name(delivery)
    line = f"{delivery.composition.prompt_sha256}  {name}\n"
    return _text_download(line, f"{name}.sha256")


def _tip(memory_id: str, brief: dict[str, Any] | None, fate: Fate) -> str:
    what = f"{brief['kind']}: {brief['snippet']}" if brief else "deleted memory"
    return f"memory {memory_id} · {what}\nsince delivered: {fate.words}"


def _diff_context(
    agent: Agent,
    comparison: Comparison,
    before: Delivery | None,
    after: Delivery | None,
    download: str,
) -> dict[str, Any]:
    ids = [*comparison.added, *comparison.removed]
    briefs = briefs_of(ids)
    # The page draws the diff's first lines only (``lens.core.diffs.PAGE_LINES``), and
    # says how many more there are; ``download`` is the whole diff.
    excerpt = diff_excerpt(comparison.diff)
    redacted = {
        "before": before is not None and before.composition.redacted_at is not None,
        "after": after is not None and after.composition.redacted_at is not None,
    }
    return {
        "agent": agent,
        "before": before,
        "after": after,
        "redacted": redacted if any(redacted.values()) else None,
        "comparison": comparison,
        "lines": excerpt.lines,
        "excerpt": excerpt,
        "download": download,
        "added": [{"id": mid, "brief": briefs.get(mid)} for mid in comparison.added],
        "removed": [{"id": mid, "brief": briefs.get(mid)} for mid in comparison.removed],
        "nav": "agents",
    }


def _found_diff(request: AppRequest, delivery_id: str) -> tuple[DeliveryDiff, str | None]:
    """The comparison a diff page or its download shows, and the ``against`` asked for;
    404 for anyone but the members of the delivery's team."""
    against = request.GET.get("against") or None

    def find(team: Team) -> DeliveryDiff:
        try:
            return delivery_diff(team, delivery_id, against)
        except DeliveryNotFound:
            raise Http404("No such delivery") from None

    found = find_linked(request, "delivery", find, _holders(delivery_id), "agent__team")
    return found, against


def _download_url(name: str, delivery_id: str, against: str | None = None) -> str:
    query = f"?{urlencode({'against': against})}" if against else ""
    return reverse(name, args=[delivery_id]) + query


@require_GET
@login_required
@costly
def delivery_diff_page(request: AppRequest, delivery_id: str) -> HttpResponse:
    """``against`` (default: the previous delivery) → this delivery, and why. An
    ``against`` that is no delivery of the same agent (unknown, mistyped, another
    team's) is a form error on the delivery's own page, still a 404."""
    try:
        found, against = _found_diff(request, delivery_id)
    except Http404:
        asked = request.GET.get("against") or ""
        if not asked:
            raise
        # Raises the same 404 for anyone who may not see the delivery itself.
        delivery = get_delivery_for_user(request, delivery_id)
        problem = (
            f"No delivery {asked[:40]!r} of {delivery.agent.name} to compare with: pick one"
            " of the recent deliveries, or copy an id from the timeline."
        )
        return _detail_page(request, delivery, compare_error=problem, status=404)
    agent = get_agent_for_user(request, found.after.agent.slug)
    download = _download_url("delivery-diff-download", found.after.id, against)
    context = _diff_context(agent, found.comparison, found.before, found.after, download)
    context["causes"] = _causes(agent, found.causes.items)
    context["causes_total"] = found.causes.total
    return render(request, "memory/delivery_diff.html", context)


# Phrases of a revision's summary the causes card shows; its page has them all.
CAUSE_WORDS = 3


def _causes(agent: Agent, causes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The causes of a diff as the page lists them: each revision with its summary in
    words, each memory event with the memory's brief (one query for all of them)."""
    briefs = briefs_of([c["memory_id"] for c in causes if c["kind"] == "memory"])
    # Each revision in the words of its own time, its sections named as it called them.
    summaries = summaries_then(
        agent, {c["revision"]: c["summary"] for c in causes if c["kind"] == "revision"}
    )
    shown = []
    for cause in causes:
        if cause["kind"] == "revision":
            words = in_words(
                summaries[cause["revision"]], created=cause["revision"] == 1, limit=CAUSE_WORDS
            )
            shown.append({**cause, "words": words})
        else:
            shown.append({**cause, "brief": briefs.get(cause["memory_id"])})
    return shown


@require_GET
@login_required
@costly
def delivery_diff_download(request: AppRequest, delivery_id: str) -> HttpResponse:
    """The diff page's whole unified diff, as a text file."""
    found, _against = _found_diff(request, delivery_id)
    get_agent_for_user(request, found.after.agent.slug)
    before = "none" if found.before is None else found.before.id
    name = f"{found.after.agent.slug}-{before}-{found.after.id}.diff"
    return _text_download(found.comparison.diff, name)


def _live(request: AppRequest, delivery_id: str) -> tuple[Agent, Delivery, Comparison]:
    delivery = get_delivery_for_user(request, delivery_id)
    agent = get_agent_for_user(request, delivery.agent.slug)
    return agent, delivery, live_diff(delivery, current_composition(agent))


@require_GET
@login_required
@costly
def live_diff_page(request: AppRequest, delivery_id: str) -> HttpResponse:
    """This delivery → the agent's live prompt: what the next delivery would change."""
    agent, delivery, comparison = _live(request, delivery_id)
    download = _download_url("delivery-live-download", delivery.id)
    context = _diff_context(agent, comparison, delivery, None, download)
    return render(request, "memory/delivery_diff.html", context)


@require_GET
@login_required
@costly
def live_diff_download(request: AppRequest, delivery_id: str) -> HttpResponse:
    """The live diff page's whole unified diff, as a text file."""
    _agent, delivery, comparison = _live(request, delivery_id)
    return _text_download(comparison.diff, f"{delivery.agent.slug}-{delivery.id}-live.diff")
