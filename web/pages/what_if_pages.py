"""What a change would do, shown where people decide it (SPEC §18.2): approving a queue
row, publishing a proposal, restoring a revision, applying the Cache stability card's
order. Each is its own small request, loaded when the row or card
comes into view (htmx) or followed as a link without JavaScript, so a page of many rows
costs no more queries for it, and each request measures one change."""

from __future__ import annotations

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
)
from memory.migration import may_review, migration_plan, plan_change
from memory.what_if import LAST_DEFAULT, what_if
from web.costly import costly
from web.pages.proposal_pages import ID_MAX, get_proposal_for_user
from web.pages.toolkit import AppRequest, get_agent_for_user, get_record_for_user

# Section ids an order may name at most (an agent declares a few dozen).
ORDER_MAX = 500


def _measured(agent: Agent, change: Change) -> tuple[WhatIf | None, str]:
    """The change's effect over the last deliveries, or why it cannot be made."""
    try:
        # The line shows figures, never the diff: left out, it costs nothing.
        return what_if(get_agent(agent.team, agent.slug), change, LAST_DEFAULT, diff=False), ""
    except DomainError as exc:
        return None, exc.message


def _answer(request: AppRequest, context: dict[str, Any]) -> HttpResponse:
    # htmx swaps the line into its row; a followed link gets a page around it.
    template = "memory/what_if.html#line" if request.htmx else "memory/what_if.html"
    return render(request, template, context)


@require_GET
@login_required
@costly
def approval_what_if(request: AppRequest, record_id: str) -> HttpResponse:
    """What approving the pending memory ``record_id`` would do."""
    record = get_record_for_user(request, record_id)
    found, refused = _measured(record.agent, DecisionChange(record.pk, "approve"))
    context = {
        "what": "approving",
        "subject": f"memory {record.pk}",
        "agent": record.agent,
        "record": record,
        "found": found,
        "phrases": effect_phrases(found, record.pk) if found else [],
        "refused": refused,
        "nav": "approvals",
    }
    return _answer(request, context)


@require_GET
@login_required
@costly
def proposal_what_if(request: AppRequest, proposal_id: int) -> HttpResponse:
    """What publishing proposal ``proposal_id`` would do: its config in place of the
    agent's declarations, now and over the last deliveries."""
    proposal = get_proposal_for_user(request, proposal_id)
    found, refused = _measured(proposal.agent, ConfigChange(proposed_config(proposal)))
    context = {
        "what": "publishing",
        "subject": f"proposal {proposal.pk}",
        "agent": proposal.agent,
        "proposal": proposal,
        "found": found,
        "phrases": effect_phrases(found) if found else [],
        "refused": refused,
        "nav": "approvals",
    }
    return _answer(request, context)


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
    found, refused = _measured(agent, ConfigChange(stored_config(revision)))
    context = {
        "what": "restoring",
        "subject": f"revision {revision.number}",
        "agent": agent,
        "revision": revision,
        "found": found,
        "phrases": effect_phrases(found) if found else [],
        "refused": refused,
        "nav": "agents",
    }
    return _answer(request, context)


@require_GET
@login_required
@costly
def order_what_if(request: AppRequest, slug: str) -> HttpResponse:
    """What putting the agent's Background sections in ``?order=a,b,c`` would do (the
    Cache stability card's suggestion): its cached prefix over the last deliveries."""
    agent = get_agent_for_user(request, slug)
    order = tuple(request.GET.get("order", "").split(","))[:ORDER_MAX]
    found, refused = _measured(agent, OrderChange(order))
    context = {
        "what": "applying",
        "subject": "this order",
        "agent": agent,
        "order": ",".join(order),
        "found": found,
        "phrases": effect_phrases(found) if found else [],
        "refused": refused,
        "nav": "agents",
    }
    return _answer(request, context)


@require_GET
@login_required
@costly
def migration_what_if(request: AppRequest, slug: str) -> HttpResponse:
    """What applying the agent's migration plan would do, now and over the last
    deliveries: the moves into guarded sections approved when a reviewer asks (their
    act approves them), waiting otherwise."""
    agent = get_agent_for_user(request, slug)
    change = plan_change(migration_plan(agent), approve_guarded=may_review(request.user))
    found, refused = _measured(agent, change)
    context = {
        "what": "applying",
        "subject": "this plan",
        "agent": agent,
        "migration": True,
        "found": found,
        "phrases": effect_phrases(found) if found else [],
        "refused": refused,
        "nav": "agents",
    }
    return _answer(request, context)
