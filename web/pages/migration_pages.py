"""``/agents/<slug>/migration/``: the memories whose committed placement the agent's
current routing spec and declarations would change (SPEC §18.3), grouped by where they
move from and to, each with what re-promotion makes of it; ``Apply`` and ``Apply
selected`` for a reviewer, who approves by applying the moves that wait for a person:
into guarded sections, and the instruction-shaped ones into auto sections (SPEC §19.4:
the reviewer is the person, and sees each one's signals first). A move into an earned
section waits for its sightings however it is applied (SPEC §19.1).
"""

from __future__ import annotations

from typing import Any

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
from lens.models import Agent
from memory.core.explain import seen_in
from memory.core.migration import Address, Move, Plan
from memory.core.report import DROP_REASON_HELP
from memory.core.screening import screen
from memory.core.sightings import distinct_sessions
from memory.migration import REVIEWER_PERMISSION, apply_migration, may_review, migration_plan
from memory.models import MemoryRecord
from memory.queries import record_briefs
from memory.sightings import earned_sightings, sightings_of
from web.pages.toolkit import AppRequest, WrongTeam, get_agent_for_user, use_form_team

# Each group lists at most this many memories; the rest move with ``Apply`` all the same.
SHOWN_PER_GROUP = 200
# What the queue row, the memory page and the lens say of such a memory (SPEC §19.4).
INSTRUCTION = "Reads as an instruction to the model"


def outcome_words(move: Move, reviewer: bool, seen: int | None = None, needed: int = 3) -> str:
    """What applying does to ``move``, in words: the outcome it commits, and why it waits
    when it does (its tier, its sightings, or its content). ``seen``: the sessions an
    earning move has been seen in so far; ``needed``: how many earn it its place."""
    if move.outcome == "approved":
        return "Composes at once: the section is auto."
    if move.outcome == "pending":
        return _waiting_words(move, reviewer, seen, needed)
    if move.outcome == "conflict":
        return "Stays where it is: another memory holds that address."
    return "Declined: " + DROP_REASON_HELP.get(move.reason, move.reason).lower()


def _waiting_words(move: Move, reviewer: bool, seen: int | None, needed: int) -> str:
    # Mirrors ``memory.migration._status``: a reviewer's apply approves the moves that
    # wait for a person (guarded, or instruction-shaped into auto), never one into an
    # earned section, which waits for its sightings.
    if move.tier == "earned":
        if move.instruction:
            return (
                f"{INSTRUCTION} — waits for a person: sightings never approve one, and "
                "applying leaves a move into an earned section waiting. Decide it in the queue."
            )
        return (
            f"Waits to earn its place: {seen_in(seen, needed)}. It composes once saved in "
            f"{needed} sessions; applying does not approve it (a reviewer can, in the queue)."
        )
    if move.instruction:
        why = (
            "the section is guarded"
            if move.tier == "guarded"
            else f"the system never approves one, although the section is {move.tier}"
        )
        if reviewer:
            return f"{INSTRUCTION} — approved by you when you apply: {why}."
        return f"{INSTRUCTION} — waits for a person: {why}."
    if reviewer:
        return "Approved by you when you apply: the section is guarded."
    return "Waits for a reviewer: the section is guarded."


def _place(address: Address | None, titles: dict[str, str]) -> str:
    if address is None:
        return "no placement"
    title = titles.get(address.section)
    section = f"{title} ({address.section})" if title else f"{address.section} (not declared)"
    return f"{section} › {address.key}"


def _approved_instruction(move: Move) -> bool:
    """Whether a reviewer's apply approves ``move`` though it reads as an instruction
    (it waits for a person, and not for sightings in an earned section)."""
    return move.outcome == "pending" and move.instruction and move.tier != "earned"


def _grouped(found: Plan) -> dict[tuple[str, str], list[Move]]:
    """The plan's moves by (from, to) section, those a reviewer's apply would approve
    though they read as an instruction first, so a group's shown part holds them."""
    grouped: dict[tuple[str, str], list[Move]] = {}
    for move in found.moves:
        source = move.source.section if move.source else ""
        target = move.target.section if move.target else ""
        grouped.setdefault((source, target), []).append(move)
    return {
        group: sorted(moves, key=lambda move: not _approved_instruction(move))
        for group, moves in grouped.items()
    }


def unseen_instructions(found: Plan) -> set[str]:
    """The moves the page does not show (past a group's first ``SHOWN_PER_GROUP``) that
    a reviewer's apply would approve though they read as an instruction: Apply leaves
    them for the next reading of the plan, where they show (SPEC §19.4: a person sees
    what approves an instruction)."""
    return {
        move.memory_id
        for moves in _grouped(found).values()
        for move in moves[SHOWN_PER_GROUP:]
        if _approved_instruction(move)
    }


def _groups(
    agent: Agent, found: Plan, reviewer: bool, titles: dict[str, str]
) -> list[dict[str, Any]]:
    grouped = _grouped(found)
    shown = [move for moves in grouped.values() for move in moves[:SHOWN_PER_GROUP]]
    briefs = record_briefs(agent, [move.memory_id for move in shown])
    # The words that make a move read as an instruction, marked as the queue row marks
    # them; and how many sessions each earning move has been seen in (a query each).
    contents = dict(
        MemoryRecord.objects.filter(
            pk__in=[move.memory_id for move in shown if move.instruction]
        ).values_list("id", "content")
    )
    screens = {memory_id: (text, screen(text)) for memory_id, text in contents.items()}
    earning = [move.memory_id for move in shown if move.reason == "earning"]
    seen = {holder: distinct_sessions(found) for holder, found in sightings_of(earning).items()}
    needed = earned_sightings()
    groups = []
    for (source, target), moves in grouped.items():
        groups.append(
            {
                "from": titles.get(source, source) if source else "No placement",
                "from_id": source,
                "to": titles.get(target, target) if target else "No placement",
                "to_id": target,
                # Declined when saved, at an address it may hold now (a section since
                # declared or unlocked): it stays where it is, promoted afresh.
                "same": source == target,
                "count": len(moves),
                "hidden": max(len(moves) - SHOWN_PER_GROUP, 0),
                "moves": [
                    {
                        "move": move,
                        "brief": briefs.get(move.memory_id, {}),
                        "from": _place(move.source, titles),
                        "to": _place(move.target, titles),
                        "words": outcome_words(move, reviewer, seen.get(move.memory_id), needed),
                        "screen": screens.get(move.memory_id),
                    }
                    for move in moves[:SHOWN_PER_GROUP]
                ],
            }
        )
    return groups


@require_GET
@login_required
def migration_page(request: AppRequest, slug: str) -> HttpResponse:
    agent = get_agent_for_user(request, slug)
    found = migration_plan(agent)
    reviewer = may_review(request.user)
    titles = {section.id: section.title for section in config_of(agent).background.sections}
    movers = sum(1 for move in found.moves if move.moves)
    # The instruction-shaped moves a reviewer's apply approves, named in the confirmation.
    unseen = unseen_instructions(found)
    instructions = sum(1 for move in found.moves if _approved_instruction(move)) - len(unseen)
    context = {
        "agent": agent,
        "plan": found,
        "groups": _groups(agent, found, reviewer, titles),
        "movers": movers,
        "conflicts": len(found.moves) - movers,
        "instructions": instructions,
        "may_apply": reviewer,
        "permission": REVIEWER_PERMISSION,
        "nav": "agents",
    }
    return render(request, "lens/agent_migration.html", context)


@require_POST
@login_required
def migration_apply(request: AppRequest, slug: str) -> HttpResponse:
    """Apply the plan the page showed (all of it, or the ticked moves), approving the
    moves that wait for a person (into guarded sections, and instruction-shaped ones
    into auto sections, each shown with its signals); back to the page with what
    happened in words."""
    try:
        use_form_team(request)
    except WrongTeam as exc:
        return render(request, "400.html", {"problem": exc.message}, status=400)
    agent = get_agent_for_user(request, slug)
    if not may_review(request.user):
        raise PermissionDenied(
            f"Applying a migration approves its moves that wait for a person: it needs "
            f"{REVIEWER_PERMISSION}."
        )
    back = redirect(reverse("agent-migration", args=[agent.slug]))
    if request.POST.get("confirm") != "yes":
        messages.error(request, "Nothing moved: tick the confirmation first.")
        return back
    chosen = None
    if request.POST.get("apply") == "selected":
        chosen = request.POST.getlist("memory")
        if not chosen:
            messages.error(request, "Nothing moved: no move was selected.")
            return back
    try:
        applied = apply_migration(
            agent,
            request.POST.get("plan", ""),
            chosen,
            actor=Actor.for_user(request.user),
            approve_guarded=True,
            leave=unseen_instructions,
        )
    except DomainError as exc:
        messages.error(request, exc.message)
        return back
    # Applying all, what stayed that it would have approved is what the page left out
    # (applying some, the moves not ticked stay too).
    unseen = [] if chosen else [move for move in applied.stayed if _approved_instruction(move)]
    count = len(applied.moved)
    approved = sum(1 for status in applied.outcomes.values() if status == "approved")
    waiting = sum(1 for status in applied.outcomes.values() if status == "pending")
    messages.success(
        request,
        f"Moved {count:,} memor{'y' if count == 1 else 'ies'} ({approved:,} in the prompt's "
        "sections now"
        + (f", {waiting:,} waiting in an earned section" if waiting else "")
        + ")."
        + (f" {len(applied.stayed):,} stayed." if applied.stayed else "")
        + (
            f" {len(unseen):,} that read as an instruction to the model were not shown, "
            "so they did not move: they are listed now."
            if unseen
            else ""
        ),
    )
    return back
