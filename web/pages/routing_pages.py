"""``/agents/<slug>/routing/``: an agent's routing cases and its spec's score on them
(SPEC §18.1) — the score, before and after a spec's version changed, the failures in
words, precision and recall per section, the confusion between sections, and the cases
(paged). And "Add as a routing case" from a memory's page, through the one operation.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from lens.actors import Actor
from lens.agents import with_config
from lens.core.errors import DomainError
from lens.models import Agent
from memory.core.routing import RoutingContext
from memory.core.routing_eval import FAIL_REASON_WORDS, RoutingEval
from memory.routing_cases import Before, Scored, add_case, declared, scored
from web.pages.memory_pages import detail_context
from web.pages.routing_case_forms import RoutingCaseForm
from web.pages.toolkit import (
    PAGE_SIZE,
    AppRequest,
    WrongTeam,
    get_agent_for_user,
    get_record_for_user,
    use_form_team,
)


def percent(accuracy: float | None) -> str:
    return "—" if accuracy is None else f"{accuracy * 100:.1f}".removesuffix(".0") + "%"


def score_words(found: RoutingEval) -> str:
    """ "47 of 50 cases (94%)": the lens's header and the page's figure."""
    return f"{found.correct} of {found.cases} case{'s' if found.cases != 1 else ''} " + (
        f"({percent(found.accuracy)})"
    )


def before_words(found: RoutingEval, before: Before | None) -> str | None:
    """ "before (project@1): 45 of 50 → now (project@2): 47 of 50", or None."""
    if before is None or found.spec is None:
        return None
    return (
        f"before ({found.spec}@{before.spec_version}): {before.correct} of {before.cases} → "
        f"now ({found.spec}@{found.spec_version}): {found.correct} of {found.cases}"
    )


def lens_routing(agent: Agent, ctx: RoutingContext | None = None) -> dict[str, Any] | None:
    """The lens header's routing line, or None for an agent without cases (``ctx``: the
    declarations, when the lens has them from the composition)."""
    found = scored(agent, ctx)
    if found is None:
        return None
    return {
        "words": f"Routing: {score_words(found.found)}",
        "before": before_words(found.found, found.before),
        "failing": len(found.found.failures),
    }


@require_GET
@login_required
def routing_page(request: AppRequest, slug: str) -> HttpResponse:
    agent = get_agent_for_user(request, slug)
    found = scored(agent)
    titles = {section.id: section.title for section in declared(agent).sections}
    context: dict[str, Any] = {"agent": agent, "scored": found, "nav": "agents"}
    if found is not None:
        context.update(_score_context(request, found, titles))
    return render(request, "lens/agent_routing.html", context)


def _named(section: str | None, titles: dict[str, str]) -> dict[str, Any]:
    if section is None:
        return {"id": None, "title": "Declined", "declined": True}
    return {"id": section, "title": titles.get(section, section), "declared": section in titles}


def _score_context(request: AppRequest, found: Scored, titles: dict[str, str]) -> dict[str, Any]:
    result = found.found
    failed = {failure.name: failure for failure in result.failures}
    labels = [score.section for score in result.sections]
    cells = {(cell.expected, cell.got): cell.count for cell in result.confusion}
    page = Paginator(found.cases, PAGE_SIZE).get_page(request.GET.get("page"))
    return {
        "result": result,
        "score_words": score_words(result),
        "accuracy": percent(result.accuracy),
        "before_words": before_words(result, found.before),
        "before_other_cases": found.before is not None and not found.before.same_cases,
        "failures": [
            {
                "name": failure.name,
                "expected": _named(failure.expected, titles),
                "got": _named(failure.got, titles),
                "reason": failure.reason,
                "words": _failure_words(failure.expected, failure.got, failure.reason, titles),
            }
            for failure in result.failures
        ],
        "sections": [
            {
                **_named(score.section, titles),
                "precision": percent(score.precision),
                "recall": percent(score.recall),
                "support": score.support,
            }
            for score in result.sections
        ],
        "confusion_labels": [_named(label, titles) for label in labels],
        "confusion_rows": [
            {
                **_named(expected, titles),
                "cells": [
                    {"count": cells.get((expected, got), 0), "hit": expected == got}
                    for got in labels
                ],
            }
            for expected in labels
        ],
        "page": page,
        "case_rows": [
            {
                "case": case,
                "expected": _named(case.expect, titles),
                "failure": failed.get(case.name),
            }
            for case in page.object_list
        ],
    }


def _failure_words(
    expected: str | None, got: str | None, reason: str, titles: dict[str, str]
) -> str:
    def title(section: str | None) -> str:
        return "declined" if section is None else f"“{titles.get(section, section)}”"

    if reason == "wrong-section" and expected is None:
        return f"It should be declined, but the spec places it in {title(got)}."
    if reason == "wrong-section":
        return f"Expected in {title(expected)}; the spec places it in {title(got)}."
    if expected is None:  # cannot fail when declined and expected declined
        return FAIL_REASON_WORDS[reason].capitalize() + "."
    return f"Expected in {title(expected)}, but {FAIL_REASON_WORDS[reason]}."


# --- "Add as a routing case" (a memory's page) -----------------------------------------


@require_POST
@login_required
def add_routing_case(request: AppRequest, record_id: str) -> HttpResponse:
    """Append the memory, as the form says, to its agent's routing cases (audited)."""
    try:
        use_form_team(request)
    except WrongTeam as exc:
        messages.error(request, exc.message)
        return redirect("memory-detail", record_id)
    record = get_record_for_user(request, record_id)
    agent = with_config(Agent.objects.filter(pk=record.agent_id)).get()
    sections = {section.id: section.title for section in declared(agent).sections}
    form = RoutingCaseForm(request.POST, sections=sections)
    case = form.case_input() if form.is_valid() else None
    if case is not None:
        try:
            total = add_case(agent, case, Actor.for_user(request.user))
        except DomainError as exc:
            form.add_error("name" if exc.code == "duplicate_case_name" else None, exc.message)
        else:
            messages.success(
                request, f"Added “{case.name}” to {agent.name}'s routing cases ({total} now)."
            )
            return redirect(reverse("agent-routing", args=[agent.slug]))
    context = {**detail_context(request, record, agent), "case_form": form}
    return render(request, "memory/memory_detail.html", context, status=400)
