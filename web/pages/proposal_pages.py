"""Proposal pages (SPEC §14): a change of a protected agent waiting for a second person,
with everything a reviewer reads before deciding it; publishing, rejecting and
withdrawing it, from its page or from its row in the approval queue.

Who may do what is checked here, not only by which buttons a page shows (a form can be
posted by hand): a reviewer of the team who did not propose the change publishes or
rejects it, and only its proposer withdraws it. Anyone else gets 403, nothing changed.
"""

from __future__ import annotations

from collections.abc import Sequence

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.html import format_html
from django.utils.http import content_disposition_header, urlencode
from django.utils.safestring import SafeString
from django.views.decorators.http import require_GET, require_POST

from lens.actors import Actor
from lens.core.errors import DomainError
from lens.models import Proposal, ProposalStatus, Team
from lens.proposals import (
    REASON_MAX,
    ProposalDecided,
    ProposalNotFound,
    get_proposal,
    is_proposer,
    reject_proposal,
    withdraw_proposal,
)
from lens.revisions import current_number
from memory.configuring import publish_proposal
from memory.proposal_review import review_proposal
from web.pages.proposal_rows import DIFF_PARTS, FATES_IN_ROW, proposal_view
from web.pages.queue_count import queue_count
from web.pages.toolkit import (
    TEAM_FIELD,
    AppRequest,
    WrongTeam,
    can_review,
    find_linked,
    require_team,
    use_form_team,
)

# What a form posted from the queue sends, so that it comes back to the queue.
FROM_QUEUE = "queue"
# What the database's integer columns hold: a larger number names no proposal.
ID_MAX = 2**31 - 1
# Publishing takes a second, deliberate step: only a post carrying this publishes.
CONFIRM_FIELD = "confirm"
CONFIRMED = "yes"


class ReasonForm(forms.Form):
    """A reviewer's optional reason for rejecting a proposal."""

    reason = forms.CharField(required=False, max_length=REASON_MAX, strip=True)


def get_proposal_for_user(request: AppRequest, proposal_id: int) -> Proposal:
    """Proposal ``proposal_id`` of the current team (or, for a link, of the user's team
    that has it, which becomes the current team); 404 for anyone else."""
    if not 1 <= proposal_id <= ID_MAX:
        raise Http404("No such proposal")

    def find(team: Team) -> Proposal:
        try:
            return get_proposal(team, proposal_id)
        except ProposalNotFound:
            raise Http404("No such proposal") from None

    holders = Proposal.objects.filter(pk=proposal_id)
    return find_linked(request, "proposal", find, holders, "agent__team")


def proposal_url(proposal: Proposal, team: Team | None = None) -> str:
    url = reverse("proposal", args=[proposal.pk])
    return f"{url}?{urlencode({TEAM_FIELD: team.slug})}" if team is not None else url


@require_GET
@login_required
def proposal_detail(request: AppRequest, proposal_id: int) -> HttpResponse:
    """The proposal: its facts and status, what it changes in words, its diffs, the
    token delta, every memory whose fate it changes; and what the visitor may do."""
    proposal = get_proposal_for_user(request, proposal_id)
    team = require_team(request)
    view = proposal_view(request, review_proposal(proposal), can_review(request.user, team))
    context = {
        "agent": proposal.agent,
        "proposal": proposal,
        "view": view,
        "review": view.review,
        "pending": proposal.status == ProposalStatus.PENDING,
        "published_as": _published_as(proposal),
        "config_download": reverse("proposal-diff", args=[proposal.pk, "config"]),
        "prompt_download": reverse("proposal-diff", args=[proposal.pk, "prompt"]),
        "reason_max": REASON_MAX,
        "nav": "approvals",
    }
    return render(request, "lens/proposal.html", context)


def _published_as(proposal: Proposal) -> int | None:
    """The revision a published proposal became: the one after its base (publishing
    requires the agent to be at its base revision, and always changes the config)."""
    if proposal.status != ProposalStatus.PUBLISHED:
        return None
    return proposal.base_revision + 1


@require_GET
@login_required
def proposal_diff_download(request: AppRequest, proposal_id: int, part: str) -> HttpResponse:
    """The whole config or prompt diff of a proposal, as a text file (its page draws the
    first lines only)."""
    if part not in DIFF_PARTS:
        raise Http404("No such diff")
    review = review_proposal(get_proposal_for_user(request, proposal_id))
    text = review.config_diff if part == "config" else review.prompt_diff
    proposal = review.proposal
    name = f"{proposal.agent.slug}-proposal-{proposal.pk}-{part}.diff"
    response = HttpResponse(text.encode("utf-8"), content_type="text/plain; charset=utf-8")
    response["Content-Disposition"] = content_disposition_header(True, name)
    return response


# --- deciding -----------------------------------------------------------------------


def _posted(request: AppRequest, proposal_id: int) -> tuple[Team, Proposal] | HttpResponse:
    """The team the form was rendered for (a 400 saying so when it names none of the
    user's) and its proposal ``proposal_id`` (404 when the team has none)."""
    try:
        team = use_form_team(request)
    except WrongTeam as exc:
        return HttpResponse(exc.message, status=400, content_type="text/plain; charset=utf-8")
    if not 1 <= proposal_id <= ID_MAX:
        raise Http404("No such proposal")
    try:
        return team, get_proposal(team, proposal_id)
    except ProposalNotFound:
        raise Http404("No such proposal") from None


def _require_decider(request: AppRequest, team: Team, proposal: Proposal) -> Actor:
    """The reviewer deciding ``proposal``: a reviewer of its team who did not propose it
    (SPEC §14: four eyes); 403 for anyone else."""
    actor = Actor.for_user(request.user)
    if is_proposer(proposal, actor):
        raise PermissionDenied(
            "You proposed this change: another reviewer of the team publishes or rejects it."
        )
    if not can_review(request.user, team):
        raise PermissionDenied(
            f"Publishing or rejecting a proposal of team {team.slug} needs the reviewer role "
            "in it (or the memory.approve_promotion permission)."
        )
    return actor


def _already(proposal: Proposal) -> str:
    """Why a proposal decided meanwhile cannot be decided again, in words."""
    proposal.refresh_from_db(fields=["status", "decided_by", "decided_at", "reason"])
    if proposal.status == ProposalStatus.STALE:
        why = f" {proposal.reason}" if proposal.reason else ""
        return f"Proposal {proposal.pk} is stale already:{why} Nothing was changed."
    who = f" by {proposal.decided_by}" if proposal.decided_by else ""
    return f"Proposal {proposal.pk} was already {proposal.status}{who}: nothing was changed."


def _decided(
    request: AppRequest,
    team: Team,
    proposal: Proposal,
    outcome: str,
    notice: str | SafeString,
    *,
    stale: Sequence[int] = (),
) -> HttpResponse:
    """What a decision answers: in the queue (htmx) the row replaced by what happened,
    and the rows of proposals it left stale replaced too; otherwise a message and back
    to the page the form was on."""
    if request.htmx:
        context = {
            "proposal_id": proposal.pk,
            "agent_slug": proposal.agent.slug,
            "outcome": outcome,
            "notice": notice,
            "stale": stale,
            "proposal_url": proposal_url(proposal),
            # The navigation's badge counts proposals too: refreshed out of band.
            "pending_count": queue_count(team),
        }
        return render(request, "memory/approvals.html#proposal_decided", context)
    level = (
        messages.success if outcome in ("published", "rejected", "withdrawn") else messages.warning
    )
    level(request, notice)
    return _back(request, team, proposal)


def _back(request: AppRequest, team: Team, proposal: Proposal) -> HttpResponse:
    if request.POST.get("back") == FROM_QUEUE:
        query = {TEAM_FIELD: team.slug}
        agent = request.POST.get("agent", "")
        if agent:
            query["agent"] = agent
        return redirect(f"{reverse('approvals')}?{urlencode(query)}")
    return redirect(proposal_url(proposal, team))


def _refused(request: AppRequest, team: Team, proposal: Proposal, said: str) -> HttpResponse:
    """A decision that could not land (decided meanwhile): nothing changed. With htmx a
    409 whose text the queue shows in the row; otherwise a message."""
    if request.htmx:
        return HttpResponse(said, status=409, content_type="text/plain; charset=utf-8")
    messages.warning(request, said)
    return _back(request, team, proposal)


def _failed(request: AppRequest, team: Team, proposal: Proposal, said: str) -> HttpResponse:
    if request.htmx:
        return HttpResponse(said, status=400, content_type="text/plain; charset=utf-8")
    messages.error(request, said)
    return _back(request, team, proposal)


def _other_pending(proposal: Proposal) -> list[int]:
    """The agent's other pending proposals: publishing this one leaves them stale."""
    return list(
        Proposal.objects.filter(agent_id=proposal.agent_id, status=ProposalStatus.PENDING)
        .exclude(pk=proposal.pk)
        .values_list("pk", flat=True)
    )


@require_POST
@login_required
def proposal_publish(request: AppRequest, proposal_id: int) -> HttpResponse:
    """A reviewer who did not propose it applies the proposal as the agent's next
    revision; when the agent moved on meanwhile it is marked stale and nothing changes."""
    found = _posted(request, proposal_id)
    if isinstance(found, HttpResponse):
        return found
    team, proposal = found
    actor = _require_decider(request, team, proposal)
    if request.POST.get(CONFIRM_FIELD) != CONFIRMED and proposal.status == ProposalStatus.PENDING:
        # Never one key or one click: a post without the confirmation shows what
        # publishing does and the form that confirms it; nothing changes. (One decided
        # meanwhile says so at once, below.)
        return _confirm_publish(request, team, proposal)
    others = _other_pending(proposal)
    try:
        done = publish_proposal(team, proposal.pk, actor)
    except ProposalDecided:
        return _refused(request, team, proposal, _already(proposal))
    except DomainError as exc:  # e.g. its routing spec is no longer offered
        return _failed(
            request, team, proposal, f"Proposal {proposal.pk} was not published: {exc.message}"
        )
    agent = proposal.agent
    if done.status == ProposalStatus.STALE:
        notice: str | SafeString = (
            f"Not published: {agent.name} moved to revision {current_number(agent)} before proposal "
            f"{done.pk} was published, so it is stale now. Nothing was changed."
        )
        return _decided(request, team, done, "stale", notice)
    number = done.base_revision + 1  # publishing writes the revision after its base
    notice = format_html(
        'Proposal {} of {} published as <a href="{}">revision {}</a> (approved by {}).',
        done.pk,
        agent.name,
        reverse("agent-revision", args=[agent.slug, number]),
        number,
        actor.label,
    )
    return _decided(request, team, done, "published", notice, stale=others)


def _confirm_publish(request: AppRequest, team: Team, proposal: Proposal) -> HttpResponse:
    """What publishing ``proposal`` would do, with the form that does it (its page, or
    with htmx a 400 whose text the queue shows in the row): nothing is changed."""
    if request.htmx:
        return HttpResponse(
            f"Publishing proposal {proposal.pk} needs its confirmation. Nothing was changed.",
            status=400,
            content_type="text/plain; charset=utf-8",
        )
    review = review_proposal(proposal, FATES_IN_ROW)
    view = proposal_view(request, review, True, fates=FATES_IN_ROW)
    from_queue = request.POST.get("back") == FROM_QUEUE
    agent_filter = request.POST.get("agent", "") if from_queue else ""
    query = {TEAM_FIELD: team.slug, **({"agent": agent_filter} if agent_filter else {})}
    context = {
        "agent": proposal.agent,
        "proposal": proposal,
        "view": view,
        "review": view.review,
        "becomes": proposal.base_revision + 1,
        "back": FROM_QUEUE if from_queue else "",
        "agent_filter": agent_filter,
        "cancel_url": f"{reverse('approvals')}?{urlencode(query)}"
        if from_queue
        else proposal_url(proposal, team),
        "nav": "approvals",
    }
    return render(request, "lens/proposal_publish.html", context)


@require_POST
@login_required
def proposal_reject(request: AppRequest, proposal_id: int) -> HttpResponse:
    """A reviewer who did not propose it turns the proposal down, with an optional
    reason; the agent is unchanged."""
    found = _posted(request, proposal_id)
    if isinstance(found, HttpResponse):
        return found
    team, proposal = found
    actor = _require_decider(request, team, proposal)
    form = ReasonForm(request.POST)
    if not form.is_valid():
        return _failed(
            request,
            team,
            proposal,
            f"A reason is at most {REASON_MAX} characters. Nothing was changed.",
        )
    reason = form.cleaned_data["reason"]
    try:
        done = reject_proposal(team, proposal.pk, actor, reason)
    except ProposalDecided:
        return _refused(request, team, proposal, _already(proposal))
    except DomainError as exc:
        return _failed(request, team, proposal, exc.message)
    notice = f"Proposal {done.pk} of {proposal.agent.name} rejected by {actor.label}."
    if reason:
        notice += f" Reason: {reason}"
    return _decided(request, team, done, "rejected", notice)


@require_POST
@login_required
def proposal_withdraw(request: AppRequest, proposal_id: int) -> HttpResponse:
    """The proposer takes their proposal back; nobody else may."""
    found = _posted(request, proposal_id)
    if isinstance(found, HttpResponse):
        return found
    team, proposal = found
    actor = Actor.for_user(request.user)
    if not is_proposer(proposal, actor):
        raise PermissionDenied(f"Only {proposal.proposed_by} can withdraw this proposal.")
    try:
        done = withdraw_proposal(team, proposal.pk, actor)
    except ProposalDecided:
        return _refused(request, team, proposal, _already(proposal))
    notice = f"Proposal {done.pk} of {proposal.agent.name} withdrawn: nothing was changed."
    return _decided(request, team, done, "withdrawn", notice)
