"""``store.write_as``: a write for whoever holds an API token, the token checked first
(on PostgreSQL in the write's own first statement) and named as the write's actor."""

from __future__ import annotations

import pytest
from django.utils import timezone

from kvstore import store
from kvstore.core.keys import PAYLOAD_MAX_RUNES
from kvstore.models import Key
from lens.models import ApiToken, AuditEvent, Team

pytestmark = pytest.mark.django_db


def test_a_live_token_writes_for_its_team_and_is_the_actor(team: Team) -> None:
    token, raw = ApiToken.objects.issue(team, "deploy bot")
    first = store.write_as(raw, "must.a", "one")
    second = store.write_as(raw, "must.a", "two", if_version=1)
    assert (first and first.version, second and second.version) == (1, 2)
    assert store.read(team, "must.a").payload == "two"
    written = AuditEvent.objects.filter(team=team, action="kv.written")
    actors = set(written.values_list("actor", flat=True))
    assert actors == {f"token {token.prefix}… (deploy bot)"}


@pytest.mark.parametrize("revoked", [False, True])
def test_no_live_token_writes_nothing(team: Team, revoked: bool) -> None:
    token, raw = ApiToken.objects.issue(team)
    if revoked:
        ApiToken.objects.filter(pk=token.pk).update(revoked_at=timezone.now())
    else:
        raw = "cl_not-a-token"
    assert store.write_as(raw, "must.a", "one") is None
    assert store.write_as(raw, "bad key", "one") is None
    assert store.write_as(raw, "must.a", "x" * (PAYLOAD_MAX_RUNES + 1)) is None
    assert not Key.objects.exists()
    assert not AuditEvent.objects.filter(action="kv.written").exists()


def test_refusals_come_after_the_token_check(team: Team) -> None:
    _token, raw = ApiToken.objects.issue(team)
    with pytest.raises(store.InvalidKey):
        store.write_as(raw, "bad key", "one")
    with pytest.raises(store.PayloadTooLarge):
        store.write_as(raw, "must.a", "x" * (PAYLOAD_MAX_RUNES + 1))
    store.write_as(raw, "must.a", "one")
    with pytest.raises(store.VersionConflict):
        store.write_as(raw, "must.a", "two", if_version=0)
    assert store.read(team, "must.a").version == 1
    assert AuditEvent.objects.filter(team=team, action="kv.written").count() == 1


def test_another_teams_key_of_the_same_name_is_not_touched(team: Team, other_team: Team) -> None:
    store.write(other_team, "must.a", "theirs")
    _token, raw = ApiToken.objects.issue(team)
    written = store.write_as(raw, "must.a", "ours")
    assert written is not None
    assert written.version == 1
    assert store.read(other_team, "must.a").payload == "theirs"
