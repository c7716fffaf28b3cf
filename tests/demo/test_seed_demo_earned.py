"""``seed_demo``'s earned section: Atlas's plan has earned its place in three
conversations, its city is still earning in two; a second run adds nothing, and an Atlas
seeded before sessions existed gets only the sightings it lacks."""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command

from memory.models import MemoryRecord, Promotion

pytestmark = pytest.mark.django_db


def seed(settings: Any) -> str:
    settings.DEBUG = True
    out = StringIO()
    call_command("seed_demo", stdout=out)
    return out.getvalue()


def earned_rows() -> dict[str, tuple[str, str, int]]:
    """Atlas's memories of About the Customer that hold their address, by label:
    (status, reason, sightings)."""
    rows = Promotion.objects.filter(
        agent__slug="atlas", section="user_profile", corroborates__isnull=True
    ).exclude(status="superseded")
    return {
        row.record.label or "": (row.status, row.reason, row.record.sightings.count())
        for row in rows.select_related("record")
    }


def test_atlas_has_one_memory_that_earned_its_place_and_one_still_earning(
    settings: Any,
) -> None:
    seed(settings)
    assert earned_rows() == {"plan": ("approved", "earned", 2), "city": ("pending", "earning", 1)}
    count = MemoryRecord.objects.filter(agent__slug="atlas").count()
    seed(settings)
    assert MemoryRecord.objects.filter(agent__slug="atlas").count() == count


def test_an_atlas_seeded_without_sessions_gets_the_sightings_it_lacks(settings: Any) -> None:
    seed(settings)
    atlas = MemoryRecord.objects.filter(agent__slug="atlas")
    MemoryRecord.objects.filter(agent__slug="atlas", session="chat-1102").update(session=None)
    sighting = Promotion.objects.get(
        record__agent__slug="atlas", record__session=None, corroborates__isnull=False
    )
    before = atlas.count()
    seed(settings)
    assert atlas.count() == before + 1
    assert sighting.corroborates_id is not None
