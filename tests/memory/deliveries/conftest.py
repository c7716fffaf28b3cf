"""The deliveries' agent and token: Wren routed by ``user-background`` (an auto profile
section holding the authored ``timezone`` entry, a guarded preferences section).
"""

from __future__ import annotations

import pytest

from lens.models import Agent, ApiToken, Team
from tests.api_calls import ApiClient
from tests.factories import create_agent, memory_config


@pytest.fixture
def wren(team: Team) -> Agent:
    return create_agent(team, "wren", memory_config())


@pytest.fixture
def api_token(team: Team, api: ApiClient) -> ApiToken:
    """The one token ``api`` sends."""
    return ApiToken.objects.get(team=team)
