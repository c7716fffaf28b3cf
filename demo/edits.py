"""What people changed in the demo agents' declarations after their first week, so a
newcomer finds a history of revisions by two people (SPEC §14) after ``make run``.

Each edit is who made it and the config it left, built from the one before: applied in
order to a new demo agent, each writes one revision. The edits come after the agent's
deliveries, so every delivery holds the prompt of the revision in force when it was made.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.db.models import Max, Min

from lens.actors import Actor
from lens.core.config import AgentConfig
from lens.models import Agent, Proposal, Revision, Via
from memory.configuring import store_agent, store_config
from memory.models import Delivery

# The second person of the demo team, beside the demo superuser: a reviewer who logs in
# (``seed_demo`` prints the password) and may change declarations, so four eyes need no shell.
SECOND_PERSON = "maya"

Edit = tuple[str, Callable[[dict[str, Any]], None]]
# The first revision comes this long before the first delivery; edits follow the newest
# delivery (an hour old, ``demo.backdating``) this far apart.
FIRST_REVISION_LEAD = timedelta(hours=2)
EDIT_STEP = timedelta(minutes=15)


def _wren_shorter_check_in(config: dict[str, Any]) -> None:
    config["tone"] = "Friendly, unhurried and plain-spoken. Short paragraphs; no filler."
    rules = next(s for s in config["background"]["sections"] if s["id"] == "ground_rules")
    for entry in rules["entries"]:
        if entry["key"] == "check_in_hour":
            entry["value"] = 10


def _wren_quiet_hours(config: dict[str, Any]) -> None:
    rules = next(s for s in config["background"]["sections"] if s["id"] == "ground_rules")
    rules["entries"].append(
        {"key": "quiet_hours", "value": "No proactive messages between 22:00 and 08:00."}
    )


def _protect(config: dict[str, Any]) -> None:
    config["protected"] = True


def _sentinel_reworded(config: dict[str, Any]) -> None:
    """Retitles Project State (its memories move), locks Conventions (the approved ones
    leave the prompt) and changes the tone: a proposal whose review has fates to show."""
    sections = {section["id"]: section for section in config["background"]["sections"]}
    sections["project_state"]["title"] = "Work in Flight"
    sections["conventions"]["promotion"] = "locked"
    config["tone"] = "Direct and specific. Quote the line you mean."


EDITS: dict[str, list[Edit]] = {
    "wren": [("demo", _wren_shorter_check_in), (SECOND_PERSON, _wren_quiet_hours)],
    # The code reviewer's prompt is guarded by four eyes: its changes wait as proposals.
    "sentinel": [("demo", _protect)],
}
# Changes proposed on a protected demo agent after its edits, left for a reviewer: the
# demo user (a reviewer who did not propose them) can publish or reject them.
PROPOSALS: dict[str, list[Edit]] = {
    "sentinel": [(SECOND_PERSON, _sentinel_reworded)],
}


def edited(slug: str, config: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The configs ``slug``'s edits leave, in order, each with who made it."""
    steps = []
    current = copy.deepcopy(config)
    for who, edit in EDITS.get(slug, []):
        current = copy.deepcopy(current)
        edit(current)
        steps.append((who, current))
    return steps


def tell_edits(agent: Agent, raw: dict[str, Any], people: dict[str, Actor]) -> int:
    """Apply ``agent``'s demo edits as the people who made them (through the admin's
    path: each writes a revision), once its history is told, and make its proposals;
    then move its revisions and proposals to the times the story gives them: the first
    revision before its first delivery, the edits after its newest one (a few minutes
    apart), the proposals after those. Returns how many revisions the edits wrote."""
    written = 0
    steps = edited(agent.slug, raw)
    for who, config in steps:
        store_agent(
            agent.team,
            agent.slug,
            AgentConfig.model_validate(config),
            actor=people[who],
            via=Via.ADMIN,
        )
        written += 1
    current = steps[-1][1] if steps else raw
    proposed = []
    for who, edit in PROPOSALS.get(agent.slug, []):
        config = copy.deepcopy(current)
        edit(config)
        stored = store_config(
            agent.team,
            agent.slug,
            AgentConfig.model_validate(config),
            actor=people[who],
            via=Via.ADMIN,
        )
        if stored.proposal is not None:
            proposed.append(stored.proposal.pk)
    times = Delivery.objects.filter(agent=agent).aggregate(
        first=Min("delivered_at"), last=Max("delivered_at")
    )
    if times["first"] is None:
        return written
    # The agent was declared with its first revision, before its first delivery.
    declared = times["first"] - FIRST_REVISION_LEAD
    Revision.objects.filter(agent=agent, number=1).update(created_at=declared)
    Agent.objects.filter(pk=agent.pk).update(created_at=declared)
    for number in range(2, written + 2):
        Revision.objects.filter(agent=agent, number=number).update(
            created_at=times["last"] + EDIT_STEP * (number - 1)
        )
    for n, pk in enumerate(proposed, start=written + 1):
        Proposal.objects.filter(pk=pk).update(created_at=times["last"] + EDIT_STEP * n)
    return written
