"""A proposal as the pages show it (SPEC §14): its summary in words, the token delta,
the first lines of its diffs and the memories whose fate it changes, with who may do
what to it. Shared by the proposal's page and its row in the approval queue.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from django.urls import reverse
from django.utils.http import urlencode

from lens.actors import Actor
from lens.core.change_words import Words, in_words, token_delta
from lens.core.diffs import DiffExcerpt, diff_excerpt
from lens.models import Proposal, Team
from lens.proposals import is_proposer, pending_proposals
from memory.core.explain import Explanation, Link
from memory.core.fate_changes import FateChange
from memory.proposal_review import ProposalReview, review_proposals
from web.pages.toolkit import AppRequest

# Proposals the queue shows at once, oldest first; the rest wait their turn (each is
# composed twice: a page of them must stay quick).
QUEUE_PROPOSALS = 20
# Memories whose fate changes, named in a queue row; its page names up to FATES_SHOWN.
FATES_IN_ROW = 5
# What the queue draws of each diff (the proposal's page draws as much as a revision's).
ROW_DIFF_LINES = 80
ROW_DIFF_CHARS = 20_000
DIFF_PARTS = ("config", "prompt")

# What the person looking may do: decide it, withdraw it (their own), or only read it.
Role = Literal["reviewer", "proposer", "reader"]

# Each change of fate, as a list item opens.
FATE_WORDS = {
    "dropped": "Leaves the prompt",
    "composed": "Enters the prompt",
    "moved": "Moves",
}


def role_of(request: AppRequest, proposal: Proposal, may_review: bool) -> Role:
    """The proposer never decides their own proposal, whatever their role; a reviewer
    of the team (``may_review``: ``can_review``) decides the others (SPEC §14)."""
    if is_proposer(proposal, Actor.for_user(request.user)):
        return "proposer"
    return "reviewer" if may_review else "reader"


@dataclass(frozen=True)
class FateLine:
    """One memory whose fate changes, ready for a template."""

    change: FateChange
    opening: str  # "Leaves the prompt"
    before: list[tuple[str, str]]  # the sentence's pieces, each with its link ("" for none)
    after: list[tuple[str, str]]

    @property
    def reason(self) -> str:
        """The reason code of the side the memory is left out on (§5.6)."""
        return self.change.after.reason or self.change.before.reason


def _href(link: Link | None) -> str:
    if link is None:
        return ""
    if link.kind == "memory":
        return reverse("memory-detail", args=[link.target])
    return f"{reverse('approvals')}?{urlencode({'agent': link.target})}"


def _pieces(explanation: Explanation) -> list[tuple[str, str]]:
    return [(piece.text, _href(piece.link)) for piece in explanation.pieces]


@dataclass(frozen=True)
class ProposalView:
    """Everything a template shows of one proposal."""

    proposal: Proposal
    review: ProposalReview
    words: Words
    tokens: str
    config: DiffExcerpt
    prompt: DiffExcerpt
    fates: list[FateLine]
    role: Role

    @property
    def fates_more(self) -> int:
        return self.review.fates.total - len(self.fates)


def proposal_view(
    request: AppRequest,
    review: ProposalReview,
    may_review: bool,
    *,
    fates: int | None = None,
    diff_lines: int | None = None,
    diff_chars: int | None = None,
) -> ProposalView:
    """``review`` for a template: at most ``fates`` fate changes, diffs cut at
    ``diff_lines`` lines and ``diff_chars`` characters (None: as a revision's page)."""
    proposal = review.proposal
    excerpt: dict[str, Any] = {}
    if diff_lines is not None:
        excerpt["max_lines"] = diff_lines
    if diff_chars is not None:
        excerpt["max_chars"] = diff_chars
    shown = review.fates.changes if fates is None else review.fates.changes[:fates]
    return ProposalView(
        proposal=proposal,
        review=review,
        words=in_words(review.summary, review.titles),
        tokens=token_delta(review.tokens_from, review.tokens_to),
        config=diff_excerpt(review.config_diff, **excerpt),
        prompt=diff_excerpt(review.prompt_diff, **excerpt),
        fates=[
            FateLine(
                change, FATE_WORDS[change.change], _pieces(change.before), _pieces(change.after)
            )
            for change in shown
        ],
        role=role_of(request, proposal, may_review),
    )


@dataclass(frozen=True)
class QueueProposals:
    """The queue's proposals: the first few pending ones, and how many are pending."""

    rows: list[ProposalView]
    total: int


def queue_proposals(
    request: AppRequest, team: Team, may_review: bool, agent_slug: str = ""
) -> QueueProposals:
    """``team``'s pending proposals (of one agent, with the queue's agent filter), the
    oldest ``QUEUE_PROPOSALS`` of them reviewed: a fixed number of queries."""
    pending = pending_proposals(team, agent_slug)
    first = list(pending[:QUEUE_PROPOSALS])
    total = len(first) if len(first) < QUEUE_PROPOSALS else pending.count()
    # Only the fates a row names are put in words.
    reviews = review_proposals(first, limit=FATES_IN_ROW)
    rows = [
        proposal_view(
            request,
            reviews[proposal.pk],
            may_review,
            fates=FATES_IN_ROW,
            diff_lines=ROW_DIFF_LINES,
            diff_chars=ROW_DIFF_CHARS,
        )
        for proposal in first
    ]
    return QueueProposals(rows, total)
