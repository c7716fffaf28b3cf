"""A token's name never breaks a write: it is bounded where tokens are issued, and the
actor label events store (``token cl_…  (name)``) always fits its column, whatever name
an older row holds. SQLite does not enforce a column's length (PostgreSQL refuses the
write with a server error), so lengths are asserted explicitly.
"""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from lens.actors import LABEL_MAX, Actor
from lens.models import ApiToken, Team, hash_token
from memory.models import MemoryEvent
from tests.api_calls import ApiClient
from tests.factories import create_agent, memory_config

pytestmark = pytest.mark.django_db

NAME_MAX = ApiToken._meta.get_field("name").max_length
ACTOR_MAX = MemoryEvent._meta.get_field("actor").max_length


def test_the_label_bound_matches_the_event_column() -> None:
    assert ACTOR_MAX is not None
    assert LABEL_MAX <= ACTOR_MAX


def test_a_memory_saved_with_the_longest_token_name_is_saved(team: Team) -> None:
    # The probe's case: any name over ~183 characters overflowed the actor label. The
    # column holds 200 (PostgreSQL enforces it), and the label still has to fit.
    assert NAME_MAX is not None
    raw = "cl_" + "t" * 40
    name = "n" * (NAME_MAX - 1) + "Z"
    ApiToken.objects.create(team=team, name=name, prefix=raw[:10], digest=hash_token(raw))
    create_agent(team, "wren", memory_config())
    response = ApiClient(raw).post(
        "/api/agents/wren/memories", {"kind": "profile", "content": "Lives by the sea."}
    )
    assert response.status_code == 201, response.content
    actors = set(
        MemoryEvent.objects.filter(actor_token__isnull=False).values_list("actor", flat=True)
    )
    assert len(actors) == 1, actors
    (actor,) = actors
    assert ACTOR_MAX is not None
    assert len(actor) <= ACTOR_MAX
    assert actor.startswith(f"token {raw[:10]}… (nnnn")
    assert actor.endswith("n…)")


@pytest.mark.parametrize("length", [1, 100, 180, 181, 199, 200, 255, 10_000])
def test_every_label_fits_and_keeps_the_prefix(team: Team, length: int) -> None:
    token = ApiToken(team=team, name="x" * length, prefix="cl_abcdefg")
    label = Actor.for_token(token).label
    assert len(label) <= LABEL_MAX
    assert label.startswith("token cl_abcdefg… (x")
    assert label.endswith(")")


def test_a_name_that_fits_is_shown_whole(team: Team) -> None:
    head = "token cl_abcdefg… ("
    name = "y" * (LABEL_MAX - len(head) - 1)
    token = ApiToken(team=team, name=name, prefix="cl_abcdefg")
    assert Actor.for_token(token).label == f"{head}{name})"
    longer = ApiToken(team=team, name=name + "z", prefix="cl_abcdefg")
    assert Actor.for_token(longer).label == f"{head}{name[:-1]}…)"
    assert Actor.for_token(ApiToken(team=team, prefix="cl_abcdefg")).label == "token cl_abcdefg…"


def test_issuing_refuses_a_name_longer_than_the_column(team: Team) -> None:
    assert NAME_MAX is not None
    with pytest.raises(ValueError, match=f"at most {NAME_MAX} characters"):
        ApiToken.objects.issue(team, name="n" * (NAME_MAX + 1))
    assert not ApiToken.objects.exists()
    token, _raw = ApiToken.objects.issue(team, name="n" * NAME_MAX)
    assert token.name == "n" * NAME_MAX


def test_the_issue_token_command_refuses_a_long_name(team: Team) -> None:
    assert NAME_MAX is not None
    with pytest.raises(CommandError, match=f"at most {NAME_MAX} characters"):
        call_command("issue_token", team.slug, name="n" * 255, stdout=io.StringIO())
    assert not ApiToken.objects.exists()
    out = io.StringIO()
    call_command("issue_token", team.slug, name="ci", stdout=out, stderr=io.StringIO())
    assert ApiToken.objects.get().name == "ci"
    assert out.getvalue().strip().startswith("cl_")
