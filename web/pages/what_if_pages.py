"""What a change would do, shown where people decide it (SPEC §18.2): approving a queue
row, publishing a proposal, restoring a revision, applying the Cache stability card's
order. Each is its own small request, loaded when the row or card
comes into view (htmx) or followed as a link without JavaScript, so a page of many rows
costs no more queries for it, and each request measures one change."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from lens.agents import get_agent
from lens.core.errors import DomainError
from lens.models import Agent
from lens.proposals import proposed_config
from lens.revisions import RevisionNotFound, get_revision, stored_config
from memory.core.what_if import (
    Change,
    ConfigChange,
    DecisionChange,
    OrderChange,
    WhatIf,
    effect_phrases,
    stability_sentence,
)
from memory.migration import may_review, migration_plan, plan_change
from memory.what_if import LAST_DEFAULT, what_if
from web.costly import costly
from web.pages.proposal_pages import ID_MAX, get_proposal_for_user
from web.pages.toolkit import AppRequest, get_agent_for_user, get_record_for_user

# Section ids an order may name at most (an agent declares a few dozen).
ORDER_MAX = 500


def _answer(
    request: AppRequest,
    agent: Agent,
    change: Change,
    what: str,
    subject: str,
    *,
    nav: str = "agents",
    decided: str | None = None,
    phrase: Callable[[WhatIf], str] | None = None,
    **extra: Any,
) -> HttpResponse:
    """The change's effect over the last deliveries (or why it cannot be made) as a line:
    htmx swaps it into its row; a followed link gets a page around it. ``decided``: the
    memory a decision is about, said apart in the phrases; ``phrase``: the view's own
    sentence in place of the phrases (the Cache stability card's)."""
    refused = ""
    found: WhatIf | None = None
    try:
        # The line shows figures, never the diff: left out, it costs nothing.
        found = what_if(get_agent(agent.team, agent.slug), change, LAST_DEFAULT, diff=False)
    except DomainError as exc:
        refused = exc.message
    context = {
        "what": what,
        "subject": subject,
        "agent": agent,
        "found": found,
        "phrases": effect_phrases(found, decided) if found and phrase is None else [],
        "sentence": phrase(found) if found and phrase is not None else "",
        "refused": refused,
        "nav": nav,
        **extra,
    }
    template = "memory/what_if.html#line" if request.htmx else "memory/what_if.html"
    return render(request, template, context)


@require_GET
@login_required
@costly
def approval_what_if(request: AppRequest, record_id: str) -> HttpResponse:
    """What approving the pending memory ``record_id`` would do."""
    record = get_record_for_user(request, record_id)
    return _answer(
        request,
        record.agent,
        DecisionChange(record.pk, "approve"),
        "approving",
        f"memory {record.pk}",
        nav="approvals",
        decided=record.pk,
        record=record,
    )


@require_GET
@login_required
@costly
def proposal_what_if(request: AppRequest, proposal_id: int) -> HttpResponse:
    """What publishing proposal ``proposal_id`` would do: its config in place of the
    agent's declarations, now and over the last deliveries."""
    proposal = get_proposal_for_user(request, proposal_id)
    return _answer(
        request,
        proposal.agent,
        ConfigChange(proposed_config(proposal)),
        "publishing",
        f"proposal {proposal.pk}",
        nav="approvals",
        proposal=proposal,
    )


@require_GET
@login_required
@costly
def revision_what_if(request: AppRequest, slug: str, number: int) -> HttpResponse:
    """What restoring revision ``number`` would do: its config in place of the agent's
    declarations, now and over the last deliveries."""
    agent = get_agent_for_user(request, slug)
    try:
        if not 1 <= number <= ID_MAX:
            raise RevisionNotFound("No such revision")
        revision = get_revision(agent, number)
    except RevisionNotFound:
        raise Http404("No such revision") from None
    return _answer(
        request,
        agent,
        ConfigChange(stored_config(revision)),
        "restoring",
        f"revision {revision.number}",
        revision=revision,
    )


@require_GET
@login_required
@costly
def order_what_if(request: AppRequest, slug: str) -> HttpResponse:
    """What putting the agent's Background sections in ``?order=a,b,c`` would do (the
    Cache stability card's suggestion): its cached prefix over the last deliveries."""
    agent = get_agent_for_user(request, slug)
    order = tuple(request.GET.get("order", "").split(","))[:ORDER_MAX]
    return _answer(
        request,
        agent,
        OrderChange(order),
        "applying",
        "this order",
        phrase=stability_sentence,
        order=",".join(order),
    )


@require_GET
@login_required
@costly
def migration_what_if(request: AppRequest, slug: str) -> HttpResponse:
    """What applying the agent's migration plan would do, now and over the last
    deliveries: the moves into guarded sections approved when a reviewer asks (their
    act approves them), waiting otherwise."""
    agent = get_agent_for_user(request, slug)
    change = plan_change(migration_plan(agent), approve_guarded=may_review(request.user))
    return _answer(request, agent, change, "applying", "this plan", migration=True)
