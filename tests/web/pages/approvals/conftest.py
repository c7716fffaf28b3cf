"""The approval queue's agents: Wren (user-background, a guarded preferences section)
and Atlas (the project preset)."""

from __future__ import annotations

import pytest

from lens.models import Agent, Team
from tests.factories import approvals_config, create_agent, project_config


@pytest.fixture
def wren(team: Team) -> Agent:
    return create_agent(team, "wren", approvals_config())


@pytest.fixture
def atlas(team: Team) -> Agent:
    return create_agent(team, "atlas", project_config())
