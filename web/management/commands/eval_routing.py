"""``eval_routing``: score each agent's routing spec on its routing cases (SPEC §18.1),
print each agent's score and failures, and exit 1 when one is below ``--min-accuracy``:
the gate a deployment's CI runs when it changes a spec (specs are code)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from lens.models import Agent, Team
from memory.core.routing_eval import FAIL_REASON_WORDS, RoutingEval
from memory.models import RoutingCase
from memory.routing_cases import score_and_record


def percent(accuracy: float) -> str:
    """94 %, 66.7 %: one decimal at most, none when it is a whole number."""
    return f"{accuracy * 100:.1f}".removesuffix(".0")


def score_line(slug: str, found: RoutingEval) -> str:
    spec = f"{found.spec}@{found.spec_version}" if found.spec else "no routing spec"
    accuracy = percent(found.accuracy or 0.0)
    return f"{slug}: {found.correct}/{found.cases} ({accuracy}%) {spec}"


def failure_lines(found: RoutingEval) -> list[str]:
    def shown(section: str | None) -> str:
        return section if section is not None else "declined"

    return [
        f"  {failure.name}: expected {shown(failure.expected)}, got {shown(failure.got)} "
        f"({failure.reason}: {FAIL_REASON_WORDS[failure.reason]})"
        for failure in found.failures
    ]


def _bar(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 1:
        raise ValueError(text)
    return value


class Command(BaseCommand):
    help = (
        "Score each agent's routing spec on its routing cases against its current "
        "declarations: one line per agent with cases (slug: correct/cases (accuracy%) "
        "spec@version), then its failures. Records each score, so the lens can show a "
        "spec's score before and after its version changed. Exit 1 when an agent is "
        "below --min-accuracy."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--team", help="this team's agents only (its slug)")
        parser.add_argument("--agent", help="this agent only (its slug)")
        parser.add_argument(
            "--min-accuracy",
            type=_bar,
            metavar="0-1",
            help="exit 1 when an agent's accuracy is below this (0 to 1, e.g. 0.95)",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        team, slug, bar = opts["team"], opts["agent"], opts["min_accuracy"]
        if team is not None and not Team.objects.filter(slug=team).exists():
            raise CommandError(f"No team {team!r}.")
        agents = Agent.objects.filter(pk__in=RoutingCase.objects.values("agent")).select_related(
            "team"
        )
        if team is not None:
            agents = agents.filter(team__slug=team)
        if slug is not None:
            agents = agents.filter(slug=slug)
        chosen = list(agents.order_by("team__slug", "slug"))
        if slug is not None and not chosen:
            raise CommandError(f"No agent {slug!r} with routing cases.")
        several = len({agent.team_id for agent in chosen}) > 1
        below = []
        for agent in chosen:
            found = score_and_record(agent)
            name = f"{agent.team.slug}/{agent.slug}" if several else agent.slug
            self.stdout.write(score_line(name, found))
            for line in failure_lines(found):
                self.stdout.write(line)
            if bar is not None and (found.accuracy or 0.0) < bar:
                below.append(name)
        if not chosen:
            self.stdout.write("No agent has routing cases.")
        if below:
            raise CommandError(f"Below {percent(bar)}% routing accuracy: {', '.join(below)}.")
