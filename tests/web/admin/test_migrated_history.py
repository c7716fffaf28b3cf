"""The admin shows the promotion rows a migration replaced (SPEC §18.3), read-only."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from lens.actors import Actor
from lens.models import Team
from memory.migration import apply_migration, migration_plan
from memory.models import MigratedPromotion
from tests.factories import migration_story

pytestmark = pytest.mark.django_db


def test_a_memory_shows_where_it_was_before_a_migration(
    team: Team, settings: Any, admin_client: Client
) -> None:
    agent, ids = migration_story(team, settings)
    apply_migration(agent, migration_plan(agent).sha256, actor=Actor(label="ops"))
    page = admin_client.get(f"/admin/memory/memoryrecord/{ids['name']}/change/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "migrated promotion" in text.lower()
    assert "about_user" in text
    assert "user_profile" in text
    row = MigratedPromotion.objects.get(record_id=ids["name"])
    listing = admin_client.get("/admin/memory/migratedpromotion/")
    assert listing.status_code == 200
    change = admin_client.get(f"/admin/memory/migratedpromotion/{row.pk}/change/")
    assert change.status_code == 200
    assert (
        admin_client.post(
            f"/admin/memory/migratedpromotion/{row.pk}/delete/", {"post": "yes"}
        ).status_code
        == 403
    )
    assert MigratedPromotion.objects.filter(pk=row.pk).exists()
