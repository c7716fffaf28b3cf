"""A revision diff renders each revision's prompt without counting its sections and
counts the two totals from the stretch where they differ: the same prompts and totals
as composing each revision's config with the agent's memories (SPEC §14), whatever was
counted before.
"""

from __future__ import annotations

import pytest

from lens.actors import Actor
from lens.agents import get_agent
from lens.core import token_counts
from lens.core.config import AgentConfig
from lens.core.diffs import unified_diff
from lens.models import Team, Via
from lens.revisions import get_revision, stored_config
from memory.composition import compose_configs
from memory.configuring import store_agent
from memory.core.records import MemoryInput
from memory.revision_diffs import revision_diff
from memory.saving import save_memory
from tests.factories import memory_config

pytestmark = pytest.mark.django_db


def _history(team: Team) -> None:
    """Four revisions of an agent whose memories the fold composes."""
    config = memory_config(preferences="auto")
    store_agent(team, "wren", AgentConfig.model_validate(config))
    for n in range(3):
        save_memory(
            get_agent(team, "wren"),
            MemoryInput(kind="preference", content=f"likes tea, cup {n}", label=f"tea{n}"),
            Actor(label="runtime"),
        )
    edits = [
        {"persona": "You are Wren, briefly."},
        {"manual": "Answer in one line.\n/slash lines and  spaces \n\n"},
        {"persona": config["persona"], "manual": ""},
    ]
    for edit in edits:
        config = {**config, **edit}
        store_agent(
            team, "wren", AgentConfig.model_validate(config), actor=Actor(label="ana"), via=Via.API
        )


@pytest.mark.parametrize("counted", ["nothing", "before", "after"])
def test_the_diff_is_the_compositions_of_both_revisions(team: Team, counted: str) -> None:
    _history(team)
    agent = get_agent(team, "wren")
    pairs = [(n, m) for n in range(1, 5) for m in range(1, 5)]
    for number, against in pairs:
        old, new = (stored_config(get_revision(agent, n)) for n in (against, number))
        before, after = compose_configs(agent, [old, new])
        assert "likes tea, cup 2" in after.prompt.text  # the memories are composed
        token_counts._counter.forget()
        if counted == "before":
            token_counts.count_tokens(before.prompt.text)
        elif counted == "after":
            token_counts.count_tokens(after.prompt.text)
        found = revision_diff(agent, number, against)
        assert (found.tokens_from, found.tokens_to) == (before.tokens.total, after.tokens.total)
        assert found.prompt_diff == unified_diff(
            before.prompt.text, after.prompt.text, f"revision {against}", f"revision {number}"
        )
    token_counts._counter.forget()
    first = revision_diff(agent, 1)
    (composed,) = compose_configs(agent, [stored_config(get_revision(agent, 1))])
    assert (first.tokens_from, first.tokens_to) == (0, composed.tokens.total)
