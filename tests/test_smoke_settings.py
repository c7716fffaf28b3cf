from __future__ import annotations

import pytest

from lens.core.counts import format_counts


def test_counts_label_uses_a_middle_dot() -> None:
    assert format_counts(2, 5) == "2 sections \u00b7 5 entries"


@pytest.mark.django_db
def test_member_sees_the_agent_list(member_client, agent) -> None:
    response = member_client.get("/")
    assert response.status_code == 200
    assert b"/agents/wren/" in response.content
