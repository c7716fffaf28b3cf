"""Dashboard pages: the agents list and the per-agent lens."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from html import escape
from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_GET, require_POST

from lens.agents import config_of, with_config
from lens.core.errors import DomainError
from lens.core.fragments import PromptSection
from lens.core.report import DROP_REASON_HELP, DROP_REASONS
from lens.http import AppRequest, current_team, get_agent_for_user
from lens.models import Agent
from memory.composition import compose, compose_many, summarise
from memory.core.deliveries import sha256_hex
from memory.deliveries import last_delivery
from memory.forms import TryMemoryForm
from memory.preview import preview_save
from memory.queries import record_briefs
from memory.recall import InvalidMessage, recall


@require_GET
@login_required
def agent_list(request: AppRequest) -> HttpResponse:
    team = current_team(request)
    agents = (
        list(with_config(Agent.objects.filter(team=team)).order_by("name", "slug")) if team else []
    )
    compositions = compose_many(agents)
    rows = [{"agent": agent, "summary": summarise(compositions[agent.pk])} for agent in agents]
    return render(request, "lens/agent_list.html", {"team": team, "rows": rows, "nav": "agents"})


@require_GET
@login_required
def agent_lens(request: AppRequest, slug: str) -> HttpResponse:
    agent = get_agent_for_user(request, slug)
    preview = _recall_preview(agent, request.GET.get("recall"))
    if request.htmx and "recall" in request.GET:
        # The "Preview recall" box asks for its block alone: no composition needed.
        return render(request, "lens/agent_lens.html#recall", {"agent": agent, **preview})
    context = {**_lens_context(agent), **preview, **_try_context(request, agent, None)}
    return render(request, "lens/agent_lens.html", context)


@require_POST
@login_required
def agent_try(request: AppRequest, slug: str) -> HttpResponse:
    """ "Try a memory": what saving it would do, in words. Nothing is saved. htmx swaps
    the answer into the form's card; without JavaScript the whole lens comes back."""
    agent = get_agent_for_user(request, slug)
    form = TryMemoryForm(request.POST)
    tried = _try_context(request, agent, form)
    if request.htmx:
        return render(request, "lens/agent_lens.html#try-result", {"agent": agent, **tried})
    context = {**_lens_context(agent), **_recall_preview(agent, None), **tried}
    return render(request, "lens/agent_lens.html", context)


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
        "tried_title": titles.get(found.placement.section) if found.placement else None,
        "tried_reason_help": DROP_REASON_HELP.get(found.reason or found.fold_reason or "", ""),
    }


def prompt_section_items(
    sections: Iterable[PromptSection], tip: Callable[[tuple[str, ...]], str]
) -> list[dict[str, Any]]:
    """What ``lens/_prompt_sections.html`` renders: each section, its size, and each
    fragment with the hover text ``tip`` gives for its memory ids."""
    return [
        {
            "section": section,
            "text_length": len(section.text),
            "fragments": [
                {"fragment": fragment, "tip": tip(fragment.memory_ids)}
                for fragment in section.fragments
            ],
        }
        for section in sections
    ]


def _lens_context(agent: Agent) -> dict[str, Any]:
    """Everything the lens page shows of ``agent`` (a fixed number of queries)."""
    briefs, states = record_briefs(agent)
    composition = compose(agent, states)
    sections = prompt_section_items(composition.prompt.sections, lambda ids: _tip(ids, briefs))
    grouped: dict[str, list[str]] = defaultdict(list)
    for drop in composition.report.drops:
        grouped[drop.reason].append(drop.memory_id)
    drop_groups = [
        {
            "reason": reason,
            "help": DROP_REASON_HELP[reason],
            "count": len(grouped[reason]),
            "items": _drop_items(reason, grouped[reason], briefs),
        }
        for reason in DROP_REASONS
        if grouped.get(reason)
    ]
    last = last_delivery(agent)
    return {
        "agent": agent,
        "composition": composition,
        "last_delivery": last,
        "live_differs": last is not None
        and last.composition.prompt_sha256 != sha256_hex(composition.prompt.text),
        "sections": sections,
        "prompt_length": len(composition.prompt.text),
        "declared": composition.background.sections,
        "drop_groups": drop_groups,
        "memory_total": len(briefs),
        "nav": "agents",
    }


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
    tiers = Counter(line.tier for line in found.lines)
    in_order = [(tier, tiers[tier]) for tier in ("profile", "pinned", "hit") if tiers[tier]]
    return {**context, "recall": found, "recall_tiers": in_order}


_NEEDS_ESCAPE = re.compile(r"[&<>\"']")


def _esc(text: str) -> str:
    # Most text needs no escaping; one C-level scan is cheaper than escaping it.
    return escape(text) if _NEEDS_ESCAPE.search(text) else text


def _drop_items(reason: str, memory_ids: list[str], briefs: dict[str, Any]) -> SafeString:
    """The drops panel's list items, built here rather than in a template loop: an
    agent can have thousands of drops, and the template engine costs ~100 µs per item.
    """
    prefix = reverse("memory-list")  # detail pages live at <prefix><id>/
    items = []
    for memory_id in memory_ids:
        brief = briefs.get(memory_id)
        shown = _esc(memory_id)  # server-assigned [0-9a-z], escaped all the same
        href = f"{prefix}{shown}/"
        if brief is None:
            body = f"<code>{shown}</code>"
        else:
            label = f' <span class="label">{_esc(brief["label"])}</span>' if brief["label"] else ""
            body = (
                f'<span class="kind">{_esc(brief["kind"])}</span>{label} {_esc(brief["snippet"])}'
            )
        items.append(
            f'<li data-memory-id="{shown}" data-drop-reason="{reason}">'
            f'<a href="{href}">{body}</a></li>'
        )
    # Reasons are a fixed vocabulary; everything else is escaped above. Building the
    # items with format_html measured about 8 times slower (5,000 items: 128 ms vs 16 ms).
    return mark_safe("".join(items))  # noqa: S308  # every piece escaped above


def _tip(memory_ids: tuple[str, ...], briefs: dict[str, Any]) -> str:
    """The hover/focus text of a memory fragment: which memories produced it."""
    lines = []
    for memory_id in memory_ids:
        brief = briefs.get(memory_id)
        if brief is None:
            lines.append(f"memory {memory_id}")
            continue
        label = f" · label “{brief['label']}”" if brief["label"] else ""
        lines.append(f"memory {memory_id} · {brief['kind']}{label}: {brief['snippet']}")
    return "\n".join(lines)
