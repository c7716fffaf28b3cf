"""The memory API's agent: Wren with the user-background spec."""

from __future__ import annotations

import pytest

from lens.models import Agent, Team
from tests.factories import WREN_CONFIG, create_agent


@pytest.fixture
def wren(team: Team) -> Agent:
    return create_agent(team, "wren", WREN_CONFIG)
