"""``append``'s ``first``: a change's own row written with its events (on PostgreSQL in
the same statement as the chain head's bump), and nothing appended when a unique value
of the row is taken."""

from __future__ import annotations

import pytest
from django.db import transaction

from lens.audit import Entry, append_one, verify
from lens.inserts import insert_statement
from lens.models import AuditEvent, Team

pytestmark = pytest.mark.django_db


def _entry(slug: str) -> Entry:
    return Entry("agent.created", "agent", slug, slug)


def test_the_row_and_its_event_are_written_together(team: Team) -> None:
    with transaction.atomic():
        written = append_one(
            team.pk, "system", _entry("kite"), first=insert_statement(Team(slug="kite", name="K"))
        )
    assert written
    assert Team.objects.filter(slug="kite").exists()
    assert AuditEvent.objects.filter(team=team, object_id="kite").count() == 1
    assert verify(team).first_bad is None


def test_a_taken_row_appends_nothing(team: Team) -> None:
    before = AuditEvent.objects.filter(team=team).count()
    with transaction.atomic():
        written = append_one(
            team.pk,
            "system",
            _entry("taken"),
            first=insert_statement(Team(slug=team.slug, name="T")),
        )
    assert not written
    assert AuditEvent.objects.filter(team=team).count() == before
    assert Team.objects.filter(slug=team.slug).count() == 1
    assert verify(team).first_bad is None
