"""``/agents/<slug>/stability/``: the "Cache stability" card (SPEC §17) — how often each
section changed over the last deliveries, the cached prefix as delivered and with the
suggested order, and ``Apply this order``. The lens loads the card after its first paint
(measuring tokenises up to a few dozen prompts), and links here without JavaScript.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from lens.actors import Actor
from lens.agents import config_of
from lens.core.errors import DomainError
from lens.core.provider_caches import ANTHROPIC_MINIMUM, OPENAI_MINIMUM
from lens.revisions import current_number
from memory.stability import LAST_DEFAULT, Stability, apply_order, stability
from web.costly import costly
from web.pages.revision_pages import RESTORE_PERMISSION, may_restore
from web.pages.toolkit import AppRequest, WrongTeam, get_agent_for_user, use_form_team


@require_GET
@login_required
@costly
def stability_page(request: AppRequest, slug: str) -> HttpResponse:
    agent = get_agent_for_user(request, slug)
    found = stability(agent, LAST_DEFAULT)
    titles = {section.id: section.title for section in config_of(agent).background.sections}
    gain = None
    if found.prefix_tokens_mean is not None and found.suggested_prefix_tokens_mean is not None:
        gain = round(found.suggested_prefix_tokens_mean - (found.current_prefix_tokens_mean or 0))
    rows = [
        {
            "key": figure.section
            + (f"/{figure.background_section}" if figure.background_section else ""),
            # Named as the timeline names a change: "Background › Preferences".
            "label": (
                f"Background › {titles.get(figure.background_section, figure.background_section)}"
                if figure.background_section
                else figure.section
            ),
            "changed_in": figure.changed_in,
            "tokens": f"{figure.tokens:,}",
        }
        for figure in found.sections
    ]
    context = {
        "agent": agent,
        "found": found,
        "rows": rows,
        "compared": max(found.deliveries - 1, 0),
        "figures": _figures(found),
        "suggested_titles": [titles.get(s, s) for s in found.suggested_order],
        "better": found.suggested_order != found.current_order,
        # Under both providers' minimum, neither caches anything yet: say so, or the
        # zeros read as a fault.
        "under_minimum": found.newest_tokens is not None
        and found.newest_tokens < min(OPENAI_MINIMUM, ANTHROPIC_MINIMUM),
        "newest_tokens": f"{found.newest_tokens or 0:,}",
        "gain": f"{gain:,}" if gain else "",
        "revision": current_number(agent),
        "may_apply": may_restore(request.user),
        "apply_permission": RESTORE_PERMISSION,
        "nav": "agents",
    }
    template = "lens/agent_stability.html"
    if request.htmx:
        template += "#card"
    return render(request, template, context)


def _tokens(value: float | None) -> str:
    return "—" if value is None else f"{round(value):,}"


def _figures(found: Stability) -> dict[str, str]:
    return {
        "delivered": _tokens(found.prefix_tokens_mean),
        "suggested": _tokens(found.suggested_prefix_tokens_mean),
        "openai": _tokens(found.openai_cached_mean),
        "openai_suggested": _tokens(found.suggested_openai_cached_mean),
        "anthropic": _tokens(found.anthropic_cached_mean),
        "anthropic_suggested": _tokens(found.suggested_anthropic_cached_mean),
    }


@require_POST
@login_required
def stability_apply(request: AppRequest, slug: str) -> HttpResponse:
    """Put the Background sections in the order posted, as one revision of moves (a
    proposal on a protected agent); back to the card with what happened in words."""
    try:
        use_form_team(request)
    except WrongTeam as exc:
        return render(request, "400.html", {"problem": exc.message}, status=400)
    agent = get_agent_for_user(request, slug)
    if not may_restore(request.user):
        raise PermissionDenied(
            "Reordering changes the agent's declarations: it needs the permission to "
            f"change agents ({RESTORE_PERMISSION})."
        )
    order = [part for part in request.POST.get("order", "").split(",") if part]
    try:
        revision = int(request.POST.get("revision", ""))
    except ValueError:
        return render(request, "400.html", {"problem": "No revision was posted."}, status=400)
    try:
        stored = apply_order(agent, order, Actor.for_user(request.user), if_revision=revision)
    except DomainError as exc:
        messages.error(request, f"The order was not applied: {exc.message}")
    else:
        if stored.proposal is not None:
            messages.success(
                request,
                f"{agent.name} is protected: the new order was proposed as proposal "
                f"{stored.proposal.pk}, not applied.",
            )
        elif stored.recorded is None:
            messages.info(request, "The sections are in that order already: nothing changed.")
        else:
            messages.success(request, f"Applied the order as revision {stored.recorded.number}.")
    return redirect(reverse("agent-stability", args=[agent.slug]))
