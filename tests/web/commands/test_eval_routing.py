"""``manage.py eval_routing`` (SPEC §18.1): each agent's score and failures, recorded,
and exit 1 below the bar."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from lens.actors import SYSTEM
from lens.models import Agent, Team
from memory.core.routing_eval import CaseInput
from memory.models import RoutingScore
from memory.routing_cases import replace_cases
from tests.factories import create_agent, memory_config

pytestmark = pytest.mark.django_db


def cases(*rows: tuple[str, str, str | None]) -> list[CaseInput]:
    return [
        CaseInput.model_validate(
            {"name": name, "kind": kind, "content": f"{name}.", "expect": {"section": expect}}
        )
        for name, kind, expect in rows
    ]


STORY = cases(
    ("the name", "profile", "user_profile"),
    ("the editor", "preference", "user_preferences"),
    ("a fact", "fact", None),
    ("an episode", "episode", "user_profile"),
)


def run(*args: str) -> str:
    out = StringIO()
    call_command("eval_routing", *args, stdout=out)
    return out.getvalue()


def test_it_prints_each_agent_with_cases_and_its_failures(wren: Agent, team: Team) -> None:
    create_agent(team, "quiet", memory_config())  # no cases: not listed
    replace_cases(wren, STORY, SYSTEM)
    assert run() == (
        "wren: 3/4 (75%) user-background@1\n"
        "  an episode: expected user_profile, got declined "
        "(spec-declined: the spec declines it)\n"
    )


def test_it_records_each_score(wren: Agent) -> None:
    replace_cases(wren, STORY, SYSTEM)
    run()
    scores = list(RoutingScore.objects.values_list("correct", "cases"))
    assert scores == [(3, 4), (3, 4)]  # the change's, the command's


def test_below_the_bar_it_exits_1(wren: Agent) -> None:
    replace_cases(wren, STORY, SYSTEM)
    with pytest.raises(CommandError, match="wren"):
        run("--min-accuracy", "0.95")
    assert "wren: 3/4" in run("--min-accuracy", "0.75")


def test_a_bar_outside_0_to_1_is_refused(wren: Agent) -> None:
    with pytest.raises(CommandError):
        run("--min-accuracy", "95")


def test_it_chooses_by_team_and_agent(wren: Agent, team: Team, other_team: Team) -> None:
    replace_cases(wren, STORY[:1], SYSTEM)
    theirs = create_agent(other_team, "wren", memory_config())
    replace_cases(theirs, STORY, SYSTEM)
    both = run()
    assert "acme/wren: 1/1 (100%)" in both
    assert "globex/wren: 3/4 (75%)" in both
    assert run("--team", "acme") == "wren: 1/1 (100%) user-background@1\n"
    assert run("--team", "globex", "--agent", "wren").startswith("wren: 3/4")
    with pytest.raises(CommandError, match="nope"):
        run("--team", "nope")
    with pytest.raises(CommandError, match="ghost"):
        run("--agent", "ghost")


def test_with_no_cases_anywhere_it_says_so(wren: Agent) -> None:
    assert run("--min-accuracy", "1") == "No agent has routing cases.\n"
