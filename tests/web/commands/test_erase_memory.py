"""``manage.py erase_memory ID --reason "…"`` (SPEC §10, §15)."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection, transaction

from lens.actors import SYSTEM
from lens.models import Agent, Team
from memory.deliveries.ledger import deliver
from memory.erasure import ERASED_TABLES, vacuum_erased
from memory.models import MemoryRecord, SearchDoc
from tests.factories import Unchanged, remember

pytestmark = pytest.mark.django_db

SECRET = "Ottoline's locker code is 4471"


def run(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("erase_memory", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_it_erases_and_says_what_it_redacted(wren: Agent) -> None:
    record_id = remember(wren, "profile", SECRET, label="locker")
    for _ in range(3):
        deliver(wren, SYSTEM)
    out, _err = run(record_id, "--reason", "Ticket 9")
    record = MemoryRecord.objects.get(pk=record_id)
    assert out.splitlines()[0] == (
        f"Erased memory {record_id} of agent wren (team acme): its content, label and tags "
        f"are gone; 1 stored prompt redacted (3 deliveries). "
        f"content_sha256 {record.content_sha256}"
    )
    assert "Ottoline" not in out
    assert (record.content, record.erased_by, record.erase_reason) == ("", "operator", "Ticket 9")


def test_by_names_the_person_and_team_keeps_it_to_one_team(
    wren: Agent, member: User, other_team: Team
) -> None:
    record_id = remember(wren, "profile", SECRET, label="locker")
    with pytest.raises(CommandError, match="memory_not_found"):
        run(record_id, "--reason", "x", "--team", "globex")
    with pytest.raises(CommandError, match="No team 'nope'"):
        run(record_id, "--reason", "x", "--team", "nope")
    with pytest.raises(CommandError, match="No user 'nobody'"):
        run(record_id, "--reason", "x", "--by", "nobody")
    assert MemoryRecord.objects.get(pk=record_id).erased_at is None
    run(record_id, "--reason", "x", "--team", "acme", "--by", "mira")
    assert MemoryRecord.objects.get(pk=record_id).erased_by == "mira"


def test_refusals_exit_non_zero_and_change_nothing(wren: Agent) -> None:
    record_id = remember(wren, "profile", SECRET, label="locker")
    unchanged = Unchanged()
    with pytest.raises(CommandError, match="memory_not_found: No memory '0000000000000000zz'"):
        run("0000000000000000zz", "--reason", "x")
    with pytest.raises(CommandError, match="invalid_erase_reason: A reason is required"):
        run(record_id, "--reason", "  ")
    with pytest.raises(CommandError, match="the following arguments are required: --reason"):
        run(record_id)
    unchanged.check()
    run(record_id, "--reason", "first")
    unchanged = Unchanged()
    with pytest.raises(CommandError, match=f"already_erased: Memory {record_id} was already"):
        run(record_id, "--reason", "second")
    unchanged.check()


def test_doctor_counts_erased_memories_and_finds_search_terms_left_behind(wren: Agent) -> None:
    record_id = remember(wren, "profile", SECRET, label="locker")
    run(record_id, "--reason", "x")
    out = StringIO()
    call_command("doctor", stdout=out, stderr=StringIO())
    assert "memory records: ok (1 erased)" in out.getvalue()
    SearchDoc.objects.filter(record_id=record_id).update(terms="ottoline")
    with pytest.raises(CommandError):
        call_command("doctor", stdout=StringIO(), stderr=(err := StringIO()))
    assert "1 erased memories still have search terms" in err.getvalue()


# --- PostgreSQL's VACUUM: it must run outside a transaction, so these tests commit -------


def last_vacuums() -> dict[str, object]:
    """PostgreSQL: when each table an erasure touches was last vacuumed by hand."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname, last_vacuum FROM pg_stat_user_tables WHERE relname = ANY(%s)",
            [list(ERASED_TABLES)],
        )
        return dict(cursor.fetchall())


def vacuumed_since(before: dict[str, object]) -> bool:
    after = last_vacuums()
    return set(after) == set(ERASED_TABLES) and all(
        after[table] is not None and after[table] != before.get(table) for table in after
    )


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif("connection.vendor != 'postgresql'", reason="PostgreSQL's VACUUM")
def test_on_postgresql_the_command_vacuums_what_the_erasure_touched(wren: Agent) -> None:
    record_id = remember(wren, "profile", SECRET, label="locker")
    deliver(wren, SYSTEM)
    before = last_vacuums()
    out, err = run(record_id, "--reason", "Ticket 9")
    assert vacuumed_since(before)
    assert out.splitlines()[1] == (
        "PostgreSQL: VACUUM done on the tables that held it (see docs/erasure.md for what "
        "it does not reach)."
    )
    assert err == ""
    assert vacuum_erased() is True
    with transaction.atomic():  # VACUUM cannot run inside a transaction: it says so
        assert vacuum_erased() is False


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif("connection.vendor != 'postgresql'", reason="PostgreSQL's VACUUM")
def test_no_vacuum_skips_it(wren: Agent) -> None:
    record_id = remember(wren, "profile", SECRET, label="locker")
    before = last_vacuums()
    out, _err = run(record_id, "--reason", "Ticket 9", "--no-vacuum")
    assert "VACUUM" not in out
    assert last_vacuums() == before
    assert MemoryRecord.objects.get(pk=record_id).erased_at is not None


@pytest.mark.skipif("connection.vendor != 'sqlite'", reason="SQLite has no VACUUM to run")
def test_on_sqlite_there_is_no_vacuum_to_run(wren: Agent) -> None:
    record_id = remember(wren, "profile", SECRET, label="locker")
    out, _err = run(record_id, "--reason", "Ticket 9")
    assert "VACUUM" not in out
    assert vacuum_erased() is False
