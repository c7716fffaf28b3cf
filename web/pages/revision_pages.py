"""Revision pages (SPEC §14): an agent's history of declarations, newest first, with a
form to compare any two revisions and ``Restore`` on the older ones; one revision with
what it changed and its diff against another; the diffs as files. ``Restore`` opens a
confirmation that says what restoring would do (SPEC §18.2) before anything changes.

Restoring changes the agent's declarations, which people otherwise change in the admin
with Django's ``lens.change_agent`` permission: the same permission restores here.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, PermissionsMixin
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import content_disposition_header, urlencode
from django.views.decorators.http import require_GET, require_http_methods

from lens.actors import Actor
from lens.agents import get_agent
from lens.core.change_words import in_words, titled, token_delta
from lens.core.diffs import diff_excerpt
from lens.core.errors import DomainError
from lens.models import Agent, Revision
from lens.revisions import (
    RevisionNotFound,
    get_revision,
    revisions_of,
    stored_config,
    summaries_then,
)
from memory.configuring import restore_revision
from memory.core.what_if import ConfigChange, WhatIf, effect_phrases, fate_words
from memory.revision_diffs import RevisionDiff, revision_diff
from memory.what_if import LAST_DEFAULT, what_if
from web.costly import costly
from web.pages.toolkit import (
    PAGE_SIZE,
    TEAM_FIELD,
    AppRequest,
    WrongTeam,
    get_agent_for_user,
    use_form_team,
)

# Who may restore: whoever may change agents in the admin.
RESTORE_PERMISSION = "lens.change_agent"
# Phrases a row of the list says of its changes; its page says them all.
WORDS_ON_LIST = 4
# What the database's integer columns hold: a larger number names no revision.
NUMBER_MAX = 2**31 - 1
DIFF_PARTS = ("config", "prompt")


def may_restore(user: AbstractBaseUser | AnonymousUser) -> bool:
    return isinstance(user, PermissionsMixin) and user.has_perm(RESTORE_PERMISSION)


def _in_force(agent: Agent) -> tuple[int, str]:
    """The number and config hash of the agent's newest revision, the one in force (0
    and "" before its first): one query."""
    row = revisions_of(agent).values_list("number", "config_id").first()
    return row if row is not None else (0, "")


def _revisions_url(agent: Agent, **query: Any) -> str:
    url = reverse("agent-revisions", args=[agent.slug])
    return f"{url}?{urlencode(query)}" if query else url


def _revision_url(agent: Agent, number: int, against: int | None = None) -> str:
    url = reverse("agent-revision", args=[agent.slug, number])
    return f"{url}?{urlencode({'against': against})}" if against is not None else url


def _chosen(query: QueryDict, newest: int) -> tuple[int, int] | str:
    """The two revisions the compare form names, or what is wrong with them."""
    found: list[int] = []
    for name, said in (("from", "From"), ("to", "To")):
        text = query.get(name, "").strip()
        number = int(text) if text.isascii() and text.isdigit() and len(text) < 11 else 0
        if not 1 <= number <= newest:
            shown = f"“{text[:20]}”" if text else "nothing"
            return (
                f"{said}: {shown} is not a revision of this agent. Choose a number from 1 "
                f"to {newest}."
            )
        found.append(number)
    return found[0], found[1]


@require_GET
@login_required
def revision_list(request: AppRequest, slug: str) -> HttpResponse:
    """Newest first, 50 a page. ``?from=&to=`` (the compare form) opens the diff of
    those two revisions; the page's queries do not grow with its rows."""
    agent = get_agent_for_user(request, slug)
    newest, in_force = _in_force(agent)
    compare_error = ""
    if "from" in request.GET or "to" in request.GET:
        chosen = _chosen(request.GET, newest)
        if not isinstance(chosen, str):
            return redirect(_revision_url(agent, chosen[1], chosen[0]))
        compare_error = chosen
    # Numbers have no gaps: the newest is the count, and a page is a range of numbers.
    page = Paginator(range(newest, 0, -1), PAGE_SIZE).get_page(request.GET.get("page"))
    numbers = page.object_list
    found = (
        list(revisions_of(agent).filter(number__lte=numbers[0], number__gte=numbers[-1]))
        if numbers
        else []
    )
    # Each row in the words of its own time: sections named as that revision called them.
    summaries = summaries_then(
        agent,
        {revision.number: revision.summary for revision in found},
        {revision.number: revision.config_id for revision in found},
    )
    rows = [
        {
            "revision": revision,
            "words": in_words(
                summaries[revision.number], created=revision.number == 1, limit=WORDS_ON_LIST
            ),
            "newest": revision.number == newest,
            # An older revision that declares what is in force: restoring it is offered
            # as on every older one, and the page says it changes nothing.
            "in_force": revision.config_id == in_force,
        }
        for revision in found
    ]
    context = {
        "agent": agent,
        "page": page,
        "rows": rows,
        "newest": newest,
        "compare_from": request.GET.get("from", max(newest - 1, 1)),
        "compare_to": request.GET.get("to", newest),
        "compare_error": compare_error,
        "may_restore": may_restore(request.user),
        "restore_permission": RESTORE_PERMISSION,
        "nav": "agents",
    }
    return render(
        request, "lens/agent_revisions.html", context, status=400 if compare_error else 200
    )


def _number(text: str | int) -> int:
    """A revision number from the address, or 404 (no revision has it)."""
    if isinstance(text, int):
        number = text
    elif text.isascii() and text.isdigit() and len(text) < 11:
        number = int(text)
    else:
        raise Http404("No such revision")
    if not 1 <= number <= NUMBER_MAX:
        raise Http404("No such revision")
    return number


def _found(agent: Agent, number: int) -> Revision:
    try:
        return get_revision(agent, _number(number))
    except RevisionNotFound:
        raise Http404("No such revision") from None


def _against(request: AppRequest) -> int | None:
    text = request.GET.get("against", "")
    return None if text == "" else _number(text)


def _diff(agent: Agent, number: int, against: int | None) -> RevisionDiff:
    try:
        return revision_diff(agent, number, against)
    except RevisionNotFound:
        raise Http404("No such revision") from None


@require_GET
@login_required
@costly
def revision_detail(request: AppRequest, slug: str, number: int) -> HttpResponse:
    """Revision ``number``: its facts, what it changed, and the config and prompt diffs
    against ``?against=`` (by default the revision before; the first against nothing)."""
    agent = get_agent_for_user(request, slug)
    revision = _found(agent, number)
    against = _against(request)
    found = _diff(agent, revision.number, against)
    newest, in_force = _in_force(agent)
    before = None if found.from_number == 0 else _found(agent, found.from_number)
    previous = before if before is not None and before.number == revision.number - 1 else None
    if previous is None and revision.number > 1:
        previous = _found(agent, revision.number - 1)
    query = {"against": against} if against is not None else {}
    context = {
        "agent": agent,
        "revision": revision,
        "newest": newest,
        "is_newest": revision.number == newest,
        "declares_in_force": revision.config_id == in_force,
        "words": in_words(
            titled(revision.summary, _titles_of(previous), _titles_of(revision)),
            created=revision.number == 1,
        ),
        "diff": found,
        "before": before,
        "default_against": against is None or against == revision.number - 1,
        "diff_words": in_words(
            titled(found.summary, _titles_of(before), _titles_of(revision)),
            created=found.from_number == 0,
        ),
        "tokens": token_delta(
            None if found.from_number == 0 else found.tokens_from, found.tokens_to
        ),
        "config_excerpt": diff_excerpt(found.config_diff),
        "prompt_excerpt": diff_excerpt(found.prompt_diff),
        "config_download": _download_url(agent, revision.number, "config", query),
        "prompt_download": _download_url(agent, revision.number, "prompt", query),
        "previous": revision.number - 1 if revision.number > 1 else None,
        "next": revision.number + 1 if revision.number < newest else None,
        # The form's first guess: the revision before, or for the first the one after.
        "compare_against": against
        if against is not None
        else revision.number - 1 or min(2, newest),
        "may_restore": may_restore(request.user),
        "restore_permission": RESTORE_PERMISSION,
        "nav": "agents",
    }
    return render(request, "lens/agent_revision.html", context)


def _titles_of(revision: Revision | None) -> dict[str, str]:
    """Section titles by id as ``revision``'s config has them (none before the first):
    what its words call its sections, not what the agent calls them now."""
    if revision is None:
        return {}
    return {section.id: section.title for section in stored_config(revision).background.sections}


def _download_url(agent: Agent, number: int, part: str, query: dict[str, Any]) -> str:
    url = reverse("agent-revision-diff", args=[agent.slug, number, part])
    return f"{url}?{urlencode(query)}" if query else url


@require_GET
@login_required
@costly
def revision_diff_download(request: AppRequest, slug: str, number: int, part: str) -> HttpResponse:
    """The whole config or prompt diff of a revision's page, as a text file (the page
    draws its first lines only)."""
    if part not in DIFF_PARTS:
        raise Http404("No such diff")
    agent = get_agent_for_user(request, slug)
    revision = _found(agent, number)
    found = _diff(agent, revision.number, _against(request))
    text = found.config_diff if part == "config" else found.prompt_diff
    name = f"{agent.slug}-revision-{found.from_number}-{found.to_number}-{part}.diff"
    response = HttpResponse(text.encode("utf-8"), content_type="text/plain; charset=utf-8")
    response["Content-Disposition"] = content_disposition_header(True, name)
    return response


@require_http_methods(["GET", "POST"])
@login_required
def revision_restore(request: AppRequest, slug: str, number: int) -> HttpResponse:
    """GET: the restore confirmation, with what restoring revision ``number`` would do
    (SPEC §18.2): the token change now, the memories whose fate changes, how many of
    the last prompts would change and the cached prefix before and after; Confirm
    restore posts here, Cancel goes back. POST: make its config the agent's again, as a
    new revision (on a protected agent, a proposal another reviewer publishes); back to
    the list with what happened in words. Posting needs ``lens.change_agent``: anyone
    else is refused (403) with nothing changed."""
    if request.method == "GET":
        return _restore_confirmation(request, slug, number)
    try:
        team = use_form_team(request)
    except WrongTeam as exc:
        return render(request, "400.html", {"problem": exc.message}, status=400)
    agent = get_agent_for_user(request, slug)
    revision = _found(agent, number)
    if not may_restore(request.user):
        raise PermissionDenied(
            "Restoring a revision changes the agent's declarations: it needs the "
            f"permission to change agents ({RESTORE_PERMISSION})."
        )
    try:
        restored = restore_revision(agent, revision.number, Actor.for_user(request.user))
    except RevisionNotFound:
        raise Http404("No such revision") from None
    except DomainError as exc:  # e.g. its routing spec is no longer offered
        messages.error(request, f"Revision {revision.number} was not restored: {exc.message}")
    else:
        if restored.proposal is not None:
            messages.success(
                request,
                f"{agent.name} is protected: restoring revision {revision.number} was "
                f"proposed as proposal {restored.proposal.pk}, not applied. Another "
                "reviewer publishes it from the approvals queue.",
            )
        elif restored.recorded is None:
            messages.info(request, _nothing_restored(revision.number, restored.revision))
        else:
            messages.success(
                request,
                f"Restored revision {revision.number} as revision {restored.recorded.number}.",
            )
    return redirect(_revisions_url(agent, **{TEAM_FIELD: team.slug}))


# Memories whose fate changes, listed by id on the confirmation; more are counted.
FATES_SHOWN = 20


@costly  # the what-if replays the last deliveries; confirming it is not costly
def _restore_confirmation(request: AppRequest, slug: str, number: int) -> HttpResponse:
    """The confirmation step: nothing changes until Confirm restore is posted. Any
    member sees it (404 for anyone else); the button is for those who may restore."""
    agent = get_agent_for_user(request, slug)
    revision = _found(agent, number)
    newest, in_force = _in_force(agent)
    refused = ""
    found: WhatIf | None = None
    try:
        # Its config as the change, replayed over the last deliveries; no diff drawn.
        current = get_agent(agent.team, agent.slug)
        found = what_if(current, ConfigChange(stored_config(revision)), LAST_DEFAULT, diff=False)
    except DomainError as exc:  # e.g. its routing spec is no longer offered
        refused = exc.message
    fates = found.now.memories if found is not None else ()
    from_list = request.GET.get("from") == "list"
    context = {
        "agent": agent,
        "revision": revision,
        "newest": newest,
        "declares_in_force": revision.config_id == in_force,
        "what": "restoring",
        "found": found,
        "phrases": effect_phrases(found) if found is not None else [],
        "refused": refused,
        "fates": [fate_words(fate) for fate in fates[:FATES_SHOWN]],
        "fates_more": max(0, len(fates) - FATES_SHOWN),
        "may_restore": may_restore(request.user),
        "restore_permission": RESTORE_PERMISSION,
        # The team named, as every link to the agent's pages does: a person in two
        # teams whose agents share a slug goes back to the one they confirmed for.
        "cancel": (
            _revisions_url(agent, **{TEAM_FIELD: agent.team.slug})
            if from_list
            else f"{_revision_url(agent, revision.number)}?{urlencode({TEAM_FIELD: agent.team.slug})}"
        ),
        "nav": "agents",
    }
    return render(request, "lens/agent_revision_restore.html", context)


def _nothing_restored(number: int, newest: int) -> str:
    """What restoring revision ``number`` says when its config is the one in force
    (revision ``newest``'s): no revision was written."""
    if number == newest:
        return f"Revision {number} is the one in force: nothing changed, no revision written."
    return (
        f"Revision {number} declares what is in force already (revision {newest} has the "
        "same declarations): nothing changed, no revision written."
    )
