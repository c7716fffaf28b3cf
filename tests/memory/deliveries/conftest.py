"""The deliveries' token. Their agent is the shared ``wren`` (``tests/conftest.py``):
Wren routed by ``user-background``, an auto profile section holding the authored
``timezone`` entry and a guarded preferences section.
"""

from __future__ import annotations

import pytest

from lens.models import ApiToken, Team
from tests.api_calls import ApiClient


@pytest.fixture
def api_token(team: Team, api: ApiClient) -> ApiToken:
    """The one token ``api`` sends."""
    return ApiToken.objects.get(team=team)
