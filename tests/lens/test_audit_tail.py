"""A cut tail (SPEC §15, "A head kept elsewhere catches a cut tail").

Removing a log's newest events and moving its chain head back with them leaves a chain
that verifies on its own. On PostgreSQL a login that is not the tables' owner cannot do
it by any path (a real role, granted every row privilege, tries each); on SQLite, where
whoever holds the file can, a head printed earlier and kept elsewhere
(``verify_audit --expect``) catches it.
"""

from __future__ import annotations

import secrets
from io import StringIO
from typing import Any

import psycopg
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import DatabaseError, connection, transaction
from django.db.models import F
from django.test import Client

from lens.audit import GENESIS, verify
from lens.models import AuditEvent, AuditHead, AuditPurge, Team
from tests.api_calls import ApiClient, post_memory
from tests.factories import make_user, memory_config

pytestmark = pytest.mark.django_db


def some_events(api: ApiClient, team: Team, *, memories: bool = True) -> Team:
    """A few events of different kinds: an agent, two saves, a delivery, a key. (The
    admin keeps memories, so deletes no team that holds some.)"""
    assert api.put("/api/agents/wren", memory_config()).status_code == 201
    for n in range(2 if memories else 0):
        post_memory(api, {"kind": "profile", "content": f"Fact {n}."})
    assert api.post("/api/agents/wren/deliveries", {}).status_code == 201
    assert api.put("/api/kv/notes", {"payload": "v1"}).status_code == 201
    return team


@pytest.fixture
def logged(api: ApiClient, team: Team) -> Team:
    return some_events(api, team)


def newest(team: Team) -> AuditEvent:
    row = AuditEvent.objects.filter(team=team).order_by("-seq").first()
    assert row is not None
    return row


def run(*args: str) -> tuple[int, str, str]:
    """A command as the shell runs it: exit code, stdout, and stderr with the line
    ``manage.py`` prints for a CommandError."""
    out, err = StringIO(), StringIO()
    try:
        call_command(*args, stdout=out, stderr=err)
    except CommandError as exc:
        return 1, out.getvalue(), err.getvalue() + f"CommandError: {exc}\n"
    return 0, out.getvalue(), err.getvalue()


def cut_tail(team: Team) -> tuple[int, str]:
    """Remove ``team``'s newest event and move its head back, in raw SQL, the way a login
    allowed to (SQLite's file; PostgreSQL's owner) can: a purge marker lets the event
    and the head go, a head one event shorter is written, the marker removed. Answers
    the head it had: the one an auditor kept."""
    last = newest(team)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("INSERT INTO lens_auditpurge (team_id) VALUES (%s)", [team.pk])
        cursor.execute(
            "DELETE FROM lens_auditevent WHERE team_id = %s AND seq = %s", [team.pk, last.seq]
        )
        cursor.execute("DELETE FROM lens_audithead WHERE team_id = %s", [team.pk])
        cursor.execute(
            "INSERT INTO lens_audithead (team_id, seq, sha256) VALUES (%s, %s, %s)",
            [team.pk, last.seq - 1, last.prev_sha256],
        )
        cursor.execute("DELETE FROM lens_auditpurge WHERE team_id = %s", [team.pk])
    return last.seq, last.sha256


# --- a head kept elsewhere -------------------------------------------------------------


def test_a_kept_head_holds_while_the_log_only_grows(logged: Team, api: ApiClient) -> None:
    kept = newest(logged)
    assert api.put("/api/kv/notes", {"payload": "v2"}).status_code == 200  # one more event
    code, out, _err = run("verify_audit", "--team", "acme", "--expect", f"{kept.seq}:{kept.sha256}")
    assert code == 0
    assert out.splitlines() == [
        f"{kept.seq + 1} events verified, head {newest(logged).sha256}",
        f"kept head {kept.seq} holds",
    ]


def test_a_cut_tail_passes_plain_verify_audit_but_not_a_kept_head(logged: Team) -> None:
    seq, sha = cut_tail(logged)
    # The chain alone cannot tell: it is whole, one event shorter.
    code, out, _err = run("verify_audit", "--team", "acme")
    assert (code, out) == (0, f"{seq - 1} events verified, head {newest(logged).sha256}\n")
    code, out, err = run("verify_audit", "--team", "acme", "--expect", f"{seq}:{sha}")
    assert code == 1
    assert out == ""
    assert err == (
        f"CommandError: team acme: audit log does not hold the kept head at seq {seq}: "
        f"event {seq} is gone: the log was cut back to {seq - 1} events\n"
    )


def test_a_rewritten_tail_fails_its_kept_head(logged: Team) -> None:
    """A cut tail with new events appended after it: the kept number exists again, with
    another hash."""
    seq, sha = cut_tail(logged)
    make_user("otto", logged)  # appends event seq again: member.added
    assert verify(logged).first_bad is None
    code, _out, err = run("verify_audit", "--team", "acme", "--expect", f"{seq}:{sha}")
    assert code == 1
    assert f"at seq {seq}: event {seq} now has hash {newest(logged).sha256}, not {sha}" in err


def test_a_broken_chain_is_named_before_any_kept_head(logged: Team) -> None:
    kept = newest(logged)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("INSERT INTO lens_auditpurge (team_id) VALUES (%s)", [logged.pk])
        cursor.execute("DELETE FROM lens_auditevent WHERE team_id = %s AND seq = 2", [logged.pk])
        cursor.execute("DELETE FROM lens_auditpurge WHERE team_id = %s", [logged.pk])
    code, _out, err = run("verify_audit", "--team", "acme", "--expect", f"{kept.seq}:{kept.sha256}")
    assert code == 1
    assert "audit log broken at seq 2: event 2 was removed" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--expect", f"3:{'a' * 64}"], "--expect needs --team"),
        (["--team", "acme", "--expect", "3"], "--expect takes SEQ:SHA256"),
        (["--team", "acme", "--expect", f"x:{'a' * 64}"], "--expect takes SEQ:SHA256"),
        (["--team", "acme", "--expect", f"3:{'a' * 63}"], "--expect takes SEQ:SHA256"),
        (["--team", "acme", "--expect", f"3:{'g' * 64}"], "--expect takes SEQ:SHA256"),
        (["--team", "acme", "--expect", f"0:{'a' * 64}"], "an empty log's head is 64 zeros"),
        (["--team", "nope", "--expect", f"3:{'a' * 64}"], "No team 'nope'"),
    ],
)
def test_a_malformed_kept_head_is_refused(logged: Team, args: list[str], message: str) -> None:
    code, out, err = run("verify_audit", *args)
    assert code == 1
    assert out == ""
    assert message in err
    assert len(err.splitlines()) == 1


def test_an_empty_logs_head_holds(team: Team) -> None:
    code, _out, _err = run("verify_audit", "--team", "acme", "--expect", f"0:{GENESIS}")
    assert code == 0


def test_doctor_prints_each_teams_head_to_keep(logged: Team, other_team: Team) -> None:
    make_user("otto", other_team)
    code, out, _err = run("doctor")
    assert code == 0
    keep = [line.strip() for line in out.splitlines() if "keep this head" in line]
    heads = {team.slug: newest(team) for team in (logged, other_team)}
    assert keep == [
        f"keep this head: {slug} {row.seq}:{row.sha256}" for slug, row in sorted(heads.items())
    ]
    assert (
        "  check it later: python manage.py verify_audit --team SLUG --expect SEQ:SHA256"
        in out.splitlines()
    )
    # What doctor printed is exactly what verify_audit takes, and catches the cut.
    argument = keep[0].rsplit(" ", 1)[1]
    assert run("verify_audit", "--team", "acme", "--expect", argument)[0] == 0
    cut_tail(logged)
    assert run("verify_audit", "--team", "acme", "--expect", argument)[0] == 1


# --- the chain head never goes back ----------------------------------------------------


@pytest.mark.parametrize(
    "change",
    [
        lambda team: AuditHead.objects.filter(team=team).update(seq=F("seq") - 1),
        lambda team: AuditHead.objects.filter(team=team).update(seq=0, sha256=GENESIS),
        lambda team: AuditHead.objects.filter(team=team).update(team_id=10**9),
        lambda team: AuditHead.objects.filter(team=team).delete(),
    ],
    ids=["one-back", "to-zero", "to-another-team", "deleted"],
)
def test_the_database_keeps_the_head_from_going_back(logged: Team, change: Any) -> None:
    """Even for the app's own login (the owner): only a team's deletion removes its head."""
    before = AuditHead.objects.get(team=logged)
    with pytest.raises(DatabaseError, match="never goes back"), transaction.atomic():
        change(logged)
    after = AuditHead.objects.get(team=logged)
    assert (after.seq, after.sha256) == (before.seq, before.sha256)


def test_deleting_a_team_in_the_admin_takes_its_log_head_and_marker(
    api: ApiClient,
    team: Team,
    other_team: Team,
    admin_client: Client,
    django_capture_on_commit_callbacks: Any,
) -> None:
    logged = some_events(api, team, memories=False)
    make_user("otto", other_team)
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(f"/admin/lens/team/{logged.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert not Team.objects.filter(pk=logged.pk).exists()
    assert not AuditEvent.objects.filter(team_id=logged.pk).exists()
    assert not AuditHead.objects.filter(team_id=logged.pk).exists()
    assert not AuditPurge.objects.exists()  # the marker went at the commit
    assert verify(other_team).first_bad is None


# --- PostgreSQL: a login that is not the owner -----------------------------------------


class Intruder:
    """A real PostgreSQL login granted every row privilege on every table (and the
    sequences), as an operator might grant a reporting or support login, connected to
    the test database on its own."""

    def __init__(self) -> None:
        # Roles belong to the whole cluster: a name of this run's own.
        self.name = f"lens_intruder_{secrets.token_hex(6)}"
        password = secrets.token_urlsafe(16)
        with connection.cursor() as cursor:
            cursor.execute(f"CREATE ROLE {self.name} LOGIN PASSWORD %s", [password])
            cursor.execute(
                "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public "
                f"TO {self.name}"
            )
            cursor.execute(f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {self.name}")
        settings = connection.settings_dict
        try:
            self.conn = psycopg.connect(
                host=settings["HOST"] or "127.0.0.1",
                port=settings["PORT"] or 5432,
                dbname=settings["NAME"],
                user=self.name,
                password=password,
                autocommit=True,
            )
        except psycopg.Error:
            self._drop()
            raise

    def refused(self, *statements: str) -> str:
        """Run ``statements`` in one transaction: it must fail; the error's text."""
        with pytest.raises(psycopg.Error) as caught:
            self._in_one_transaction(statements)
        return str(caught.value)

    def _in_one_transaction(self, statements: tuple[str, ...]) -> None:
        with self.conn.transaction():
            for statement in statements:
                self.conn.execute(statement)

    def close(self) -> None:
        self.conn.close()
        self._drop()

    def _drop(self) -> None:
        with connection.cursor() as cursor:
            cursor.execute(f"DROP OWNED BY {self.name}")  # its grants on this database
            cursor.execute(f"DROP ROLE {self.name}")


@pytest.mark.skipif("connection.vendor != 'postgresql'", reason="PostgreSQL's roles")
@pytest.mark.django_db(transaction=True)  # the intruder's own connection sees commits only
def test_a_login_that_is_not_the_owner_cannot_cut_or_rewrite_the_log(
    api: ApiClient, team: Team, other_team: Team, admin_client: Client
) -> None:
    logged = some_events(api, team, memories=False)
    make_user("otto", other_team)
    before = verify(logged)
    last = newest(logged)
    t, seq = logged.pk, last.seq
    made = Intruder()
    try:
        the_attack = (
            f"INSERT INTO lens_auditpurge (team_id) VALUES ({t})",
            f"DELETE FROM lens_auditevent WHERE team_id = {t} AND seq = {seq}",
            f"UPDATE lens_audithead SET seq = {seq - 1}, sha256 = '{last.prev_sha256}' "
            f"WHERE team_id = {t}",
            f"DELETE FROM lens_auditpurge WHERE team_id = {t}",
        )
        assert "for the owner of its tables only" in made.refused(*the_attack)
        # Even while a team's purge is under way (its marker written by the owner), no
        # step of it is the intruder's.
        AuditPurge.objects.create(team_id=t)
        refusals = {
            f"DELETE FROM lens_auditevent WHERE team_id = {t} AND seq = {seq}": "append-only",
            f"DELETE FROM lens_auditevent WHERE team_id = {t}": "append-only",
            f"UPDATE lens_auditevent SET actor = 'mallory' WHERE team_id = {t}": "append-only",
            f"UPDATE lens_audithead SET seq = {seq - 1} WHERE team_id = {t}": "never goes back",
            f"UPDATE lens_audithead SET team_id = 0 WHERE team_id = {t}": "never goes back",
            f"DELETE FROM lens_audithead WHERE team_id = {t}": "never goes back",
            f"DELETE FROM lens_auditpurge WHERE team_id = {t}": "owner of its tables only",
            f"UPDATE lens_auditpurge SET team_id = 0 WHERE team_id = {t}": "owner of its tables",
            f"INSERT INTO lens_auditpurge (team_id) VALUES ({t + 1000})": "owner of its tables",
            # What the row grants do not reach.
            "TRUNCATE lens_auditevent": "permission denied",
            "TRUNCATE lens_auditpurge": "permission denied",
            "ALTER TABLE lens_auditevent DISABLE TRIGGER ALL": "must be owner",
            "DROP TRIGGER lens_audit_append_only ON lens_auditevent": "must be owner",
            "DROP TRIGGER lens_audit_head_no_back ON lens_audithead": "must be owner",
            "SET session_replication_role = replica": "permission denied",
            # The team row itself: its events hold on to it.
            f"DELETE FROM lens_team WHERE id = {t}": "",
        }
        for statement, said in refusals.items():
            assert said in made.refused(statement), statement
        # A marker of its own, in a temporary table of the same name: the triggers name
        # the real one.
        assert "append-only" in made.refused(
            "CREATE TEMPORARY TABLE lens_auditpurge (team_id bigint)",
            f"INSERT INTO lens_auditpurge VALUES ({t})",
            f"DELETE FROM lens_auditevent WHERE team_id = {t} AND seq = {seq}",
        )
        # Every function of the audit log's: none purges at the intruder's call.
        names = made.conn.execute(
            "SELECT proname FROM pg_proc WHERE proname LIKE 'lens\\_audit\\_%'"
        ).fetchall()
        assert {"lens_audit_append_only", "lens_audit_purge_guard"} <= {n for (n,) in names}
        for (name,) in names:
            made.refused(f"SELECT {name}()")
        # Appending (how the product writes as any login) still moves the head forward.
        with made.conn.transaction(force_rollback=True):
            made.conn.execute(f"UPDATE lens_audithead SET seq = seq + 1 WHERE team_id = {t}")
    finally:
        made.close()
    AuditPurge.objects.filter(team_id=t).delete()  # the owner may
    after = verify(logged)
    assert (after.first_bad, after.events, after.head) == (None, before.events, before.head)
    assert after.events == seq
    # The owner's own deletion of a team still takes its log.
    response = admin_client.post(f"/admin/lens/team/{t}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert not AuditEvent.objects.filter(team_id=t).exists()
    assert not AuditHead.objects.filter(team_id=t).exists()
    assert not AuditPurge.objects.exists()
    assert verify(other_team).first_bad is None
