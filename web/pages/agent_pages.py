"""Dashboard pages: the agents list and the per-agent lens."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods

from lens.agents import AgentNotFound, config_of, with_config
from lens.core.errors import DomainError
from lens.core.outline import context_blocks, outline
from lens.models import Agent, Revision
from lens.proposals import pending_counts
from lens.revisions import revisions_of, stored_config
from lens.rows import aware
from memory.as_of import compose_as_of, revision_at
from memory.composed import current
from memory.composition import compose_many, summarise
from memory.core.composition import Composition, counts_words
from memory.core.deliveries import parse_moment, sha256_hex
from memory.core.recall import RecallTier
from memory.core.report import DROP_REASON_HELP
from memory.core.routing import DeclaredSection, RoutingContext
from memory.deliveries.ledger import last_delivery
from memory.migration import PlanCounts, plan_counts
from memory.preview import preview_save
from memory.queries import (
    Provenance,
    last_change,
    provenance,
    record_briefs,
    with_last_change,
)
from memory.recall import InvalidMessage, recall
from web.pages.drop_pages import drop_groups, drops_by_reason, shown_drops
from web.pages.lens_markup import CONTEXT, expiry_marks, prompt_section_items
from web.pages.memory_forms import TryMemoryForm
from web.pages.routing_pages import lens_routing
from web.pages.toolkit import AppRequest, current_team, get_agent_for_user, utc_minute

# How much of an unreadable ``?as_of=`` the lens says back.
AS_OF_SHOWN = 80


@require_GET
@login_required
def agent_list(request: AppRequest) -> HttpResponse:
    team = current_team(request)
    agents = (
        list(
            with_last_change(with_config(Agent.objects.filter(team=team))).order_by("name", "slug")
        )
        if team
        else []
    )
    compositions = compose_many(agents)
    waiting = pending_counts([agent for agent in agents if agent.protected])
    rows = [
        {
            "agent": agent,
            "summary": summarise(compositions[agent.pk]),
            "pending_proposals": waiting.get(agent.pk, 0),
            "last_change": last_change(agent),
            "counts_words": counts_words(compositions[agent.pk]),
        }
        for agent in agents
    ]
    return render(request, "lens/agent_list.html", {"team": team, "rows": rows, "nav": "agents"})


@require_GET
@login_required
def agent_lens(request: AppRequest, slug: str) -> HttpResponse:
    asked = request.GET.get("as_of") or ""
    moment = parse_moment(asked) if asked else None
    # The lens of now reads the composition kept for the agent's stamp: read with the
    # stamp, the agent needs no declarations (a past moment's are its revision's).
    agent = get_agent_for_user(request, slug, stamped=moment is None)
    if "recall" in request.GET:
        # The recall preview moved to the agent's tools page; older links still land there.
        return redirect(f"{reverse('agent-try', args=[agent.slug])}?{request.GET.urlencode()}")
    only_memory = request.GET.get("only") == "memory"
    if not asked:
        return render(request, "lens/agent_lens.html", _lens_context(agent, only_memory))
    if moment is not None:
        try:
            context = _lens_context(agent, only_memory, moment)
        except AgentNotFound:
            # Before the agent existed there was no agent to show: not found, as the
            # API's 404 agent_not_found (SPEC §14).
            raise Http404(f"Agent {agent.slug!r} did not exist yet at {moment}.") from None
        return render(request, "lens/agent_lens.html", context)
    # A time that does not read: the live lens, saying why, as a 400.
    # Said back bounded: a query string can be long.
    shown = asked if len(asked) <= AS_OF_SHOWN else f"{asked[:AS_OF_SHOWN]}…"
    problem = f"{shown!r} is not an ISO 8601 date and time."
    context = {
        **_lens_context(agent, only_memory),
        "as_of_problem": problem,
        "as_of_asked": asked[:AS_OF_SHOWN],
    }
    return render(request, "lens/agent_lens.html", context, status=400)


@require_http_methods(["GET", "POST"])
@login_required
def agent_try(request: AppRequest, slug: str) -> HttpResponse:
    """The agent's tools page: "Preview recall" (GET ``?recall=``) and "Try a memory"
    (POST), each an anchored card of its own (``#recall``, ``#try``) that the lens links
    to. Neither writes anything. htmx swaps an answer into its card; without JavaScript
    the page comes back with the answer. No composition is read: the page stays cheap
    however large the agent's prompt is.
    """
    agent = get_agent_for_user(request, slug)
    form = TryMemoryForm(request.POST) if request.method == "POST" else None
    if form is not None and request.htmx:
        tried = _try_context(request, agent, form)
        return render(request, "lens/agent_try.html#try-result", {"agent": agent, **tried})
    # A posted form's page previews no recall: its ?recall= stays with the GET.
    preview = _recall_preview(agent, None if form else request.GET.get("recall"))
    if form is None and request.htmx and "recall" in request.GET:
        return render(request, "lens/agent_try.html#recall", {"agent": agent, **preview})
    context = {
        "agent": agent,
        **preview,
        **_try_context(request, agent, form),
        "nav": "agents",
    }
    return render(request, "lens/agent_try.html", context)


def _try_context(request: AppRequest, agent: Agent, form: TryMemoryForm | None) -> dict[str, Any]:
    """The "Try a memory" card: its form and, for a posted one, the preview."""
    team = agent.team.slug
    if form is None:
        return {"try_form": TryMemoryForm(initial={"team": team})}
    context: dict[str, Any] = {"try_form": form}
    if not form.is_valid():
        return context
    if form.cleaned_data["team"] != team:
        form.add_error(
            None,
            f"This form was opened for team {form.cleaned_data['team']!r}; you are now "
            f"working in {team!r}. Reload the page and try again.",
        )
        return context
    data = form.memory_input()
    if data is None:
        return context
    try:
        found = preview_save(agent, data)
    except DomainError as exc:  # e.g. supersedes names no memory of this agent
        form.add_error("supersedes" if exc.code == "unknown_supersedes" else None, exc.message)
        return context
    titles = {section.id: section.title for section in config_of(agent).background.sections}
    return {
        **context,
        "tried": found,
        # The content as screened: its signals' offsets are into exactly this text.
        "tried_content": data.content,
        "tried_title": titles.get(found.placement.section) if found.placement else None,
        "tried_reason_help": DROP_REASON_HELP.get(found.reason or found.fold_reason or "", ""),
    }


def _lens_prompt(
    composition: Composition, briefs: dict[str, Any], only_memory: bool, now: datetime
) -> dict[str, Any]:
    """The lens's prompt: the role sections, then the Context as one card a block, an
    outline of the Background, the memory budget; with ``only_memory`` only the
    Background sections holding memories (a fixed number of queries)."""
    sections = composition.prompt.sections
    context = next((s for s in sections if s.name == CONTEXT), None)
    blocks = context_blocks(context, composition.background) if context else ()
    items = outline(composition.background, blocks)
    in_prompt = [mid for section in sections for mid in section.memory_ids]
    found = provenance(in_prompt, briefs)
    if only_memory:
        # The Background cards holding memories, and nothing else.
        sections = tuple(s for s in sections if s is context)
        blocks = tuple(block for block in blocks if block.memory_ids)
    # "expires in 3 days" (SPEC §19.2): from the briefs already read, no query of its own.
    windows = {mid: briefs[mid].get("valid_until") for mid in in_prompt if mid in briefs}
    expiring = expiry_marks({mid: aware(w) for mid, w in windows.items() if w}, now)
    shown = prompt_section_items(sections, lambda ids: _tip(ids, found), blocks, expiring)
    by_id = {item.id: item for item in items}
    for item in shown:
        for block in item.get("blocks", ()):
            section = block["block"].section
            block["outline"] = by_id.get(section.id) if section is not None else None
    used = composition.report.stats.chars_used.get("background", 0)
    budget = settings.MEMORY_OVERLAY_BUDGET_CHARS
    holding = sum(1 for item in items if item.memories)
    return {
        "sections": shown,
        "only_memory": only_memory,
        "outline": items,
        "outline_rendered": sum(1 for item in items if item.rendered),
        "outline_empty": sum(1 for item in items if not item.rendered),
        "sections_with_memory": holding,
        "budget": {
            "used": used,
            "max": budget,
            "used_label": f"{used:,}",
            "max_label": f"{budget:,}",
            # Over 90 % full: the next memory is likely not to fit.
            "high": budget * 9 // 10,
        },
        "memories_in_prompt": len(set(in_prompt)),
        "counts_words": counts_words(composition),
    }


def _lens_context(
    agent: Agent, only_memory: bool = False, moment: datetime | None = None
) -> dict[str, Any]:
    """Everything the lens page shows of ``agent`` (a fixed number of queries), now or
    as it stood at ``moment`` (SPEC §14). Raises AgentNotFound for a moment before the
    agent existed."""
    # One time for the prompt and its "expires in" marks (SPEC §19.2).
    now = moment or timezone.now()
    # The lens of now's section declarations, from its composition (no query).
    declared_sections: RoutingContext | None = None
    if moment is None:
        # Composed once per change (``memory.composed``).
        composed = current(agent)
        composition = composed.composition
        revision = _newest_revision(agent)
        last = last_delivery(agent)
        declared_model = agent.model
        memories = composed.memories  # every memory saved until now
        # SPEC §18.3: "N memories would move" (one query while the agent's memories,
        # declarations and spec are as they were).
        declared_sections = _declared(composition)
        moving = plan_counts(agent, declared_sections)
    else:
        composition = compose_as_of(agent, moment)
        moving = PlanCounts()  # the plan is about now
        revision = revision_at(agent, moment)
        last = None  # the deliveries line is about now
        # The model declared then: the prompt of then against that model's window.
        declared_model = stored_config(revision).model if revision is not None else agent.model
        # Every memory of the moment is in the prompt or among the drops (none silent).
        memories = composition.report.stats.composed + len(composition.report.drops)
    grouped = drops_by_reason(composition)
    in_prompt = [mid for section in composition.prompt.sections for mid in section.memory_ids]
    # Only what the page shows is described: the prompt's memories and the drops listed.
    briefs = record_briefs(agent, [*in_prompt, *shown_drops(grouped)])
    return {
        "agent": agent,
        "composition": composition,
        "as_of": moment,
        # The time control's value: the moment to the microsecond, in UTC.
        "as_of_value": moment.astimezone(UTC).isoformat() if moment is not None else "",
        "revision": revision,
        "declared_model": declared_model,
        "last_delivery": last,
        "live_differs": last is not None
        and last.composition.prompt_sha256 != sha256_hex(composition.prompt.text),
        **_lens_prompt(composition, briefs, only_memory, now),
        "prompt_length": f"{len(composition.prompt.text):,}",
        "prompt_tokens": f"{composition.tokens.total:,}",
        "declared": composition.background.sections,
        "drop_groups": drop_groups(agent, composition, grouped, briefs, moment),
        "drop_stats": _drop_stats(composition, memories),
        "memory_total": memories,
        "migration_moves": moving.moves,
        # A plan of conflicts alone moves nothing, yet is not empty: the lens says so.
        "migration_conflicts": moving.conflicts,
        # A protected agent's changes wait as proposals: the lens says how many wait.
        "pending_proposals": pending_counts([agent]).get(agent.pk, 0) if agent.protected else 0,
        # "Routing: 47 of 50 cases (94%)": about now, so not on the lens of a past moment.
        "routing": lens_routing(agent, declared_sections) if moment is None else None,
        "nav": "agents",
    }


def _declared(composition: Composition) -> RoutingContext:
    """The agent's section declarations as routing reads them, from the composition of
    now: its Background holds every declared section, as declared (no query, and none
    of the agent's entries read again)."""
    sections = composition.background.sections
    return RoutingContext(
        sections=tuple(
            DeclaredSection(id=s.id, title=s.title, promotion=s.promotion) for s in sections
        )
    )


def _newest_revision(agent: Agent) -> Revision | None:
    """The agent's newest revision for the lens's "Revision 7 by alice" line: one query,
    without the config it stored. None for an agent that predates revisions."""
    fields = ("agent_id", "number", "created_at", "actor", "via", "approved_by")
    return revisions_of(agent).only(*fields).first()


def _recall_preview(agent: Agent, message: str | None) -> dict[str, Any]:
    """The lens's "Preview recall" box: what ``message`` would recall, or why not."""
    if not message:
        return {"recall_message": message or ""}
    context: dict[str, Any] = {
        "recall_message": message,
        "recall_budget": settings.MEMORY_RECALL_BUDGET_CHARS,
    }
    try:
        found = recall(agent, message)
    except InvalidMessage as exc:
        return {**context, "recall_error": exc.message}
    in_order = [(tier, len(ids)) for tier, ids in found.tiers if ids]
    rows = [(line, RECALL_TIER_TITLES[line.tier]) for line in found.lines]
    return {**context, "recall": found, "recall_tiers": in_order, "recall_rows": rows}


# What each recall line's label means, as its tooltip says it.
RECALL_TIER_TITLES: dict[RecallTier, str] = {
    "profile": "Profile: what the agent knows about the user",
    "pinned": "Pinned candidate: placed by routing but not in the prompt",
    "spilled": "Spilled: approved, but the prompt's memory budget had no room for it",
    "hits": "Hit: the message's words found it",
}


def _drop_stats(composition: Composition, memories: int) -> dict[str, str]:
    """The routing report's counts, with thousands separators, and the memory budget in
    use: "2,928 of 3,000 chars of memory"."""
    stats = composition.report.stats
    used = stats.chars_used.get("background", 0)
    return {
        "memories": f"{memories:,}",
        "composed": f"{stats.composed:,}",
        "dropped": f"{len(composition.report.drops):,}",
        "chars": f"{used:,} of {settings.MEMORY_OVERLAY_BUDGET_CHARS:,} chars of memory",
    }


def _tip(memory_ids: tuple[str, ...], found: dict[str, Provenance]) -> str:
    """A memory fragment's tooltip: where each of its memories came from (kind, label,
    who saved it and when, its tier, who approved it and when), not its visible text."""
    blocks = []
    for memory_id in memory_ids:
        known = found.get(memory_id)
        if known is None:
            blocks.append(f"Memory {memory_id}")
            continue
        label = f" “{known.label}”" if known.label else ""
        tier = known.tier or "no"
        if known.approved_by is not None and known.approved_at is not None:
            approved = (
                f"Tier {tier} · approved by {known.approved_by} on {utc_minute(known.approved_at)}"
            )
        elif known.status == "approved":
            approved = f"Approved automatically ({tier} tier)"
        else:
            approved = f"Tier {tier} · {known.status}"
        blocks.append(f"{known.kind}{label} · memory {memory_id}\n{_saved(known)}\n{approved}")
    return "\n\n".join(blocks)


def _saved(known: Provenance) -> str:
    if known.saved_at is None or known.saved_by is None:
        return "Saved (no record of when or by whom)"
    return f"Saved {utc_minute(known.saved_at)} by {known.saved_by}"
