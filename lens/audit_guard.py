"""The database's own refusal to change the audit log (SPEC §15): triggers that abort
every UPDATE and DELETE of an event (and, on PostgreSQL, a TRUNCATE of the table), except
the deletion of the events of a team that is being deleted (``lens.models.AuditPurge``);
and triggers that keep the team's chain head (``lens.models.AuditHead``) from going back.

On PostgreSQL a team's log leaves only at the hands of the tables' owner (a member of
the role that owns them; a superuser): the purge marker, the events and the chain head
each check ``current_user`` against their table's owner before letting a row go. A
login granted only SELECT, INSERT, UPDATE and DELETE — however many tables — can append
(that is how the product writes) but can neither remove nor rewrite an event, write or
remove a purge marker, move a head back or delete it, nor drop or disable a trigger
(that takes ownership). The hash chain then never needs to catch a cut tail there.

What this does not stop: the owner, a superuser, or whoever can write the SQLite file can
drop the triggers first (and on SQLite every login is the file's). The hash chain is
what catches a change in the middle (``verify_audit`` names the first event that no
longer fits); a head kept elsewhere (``verify_audit --expect SEQ:SHA256``) is what
catches a cut tail whose head was moved back with it.

The triggers fire on UPDATE and DELETE only: appending (an INSERT of events, the head's
forward move) runs none of their code but the head's ``WHEN`` test, so the hot path
pays nothing measurable.
"""

from __future__ import annotations

from django.db.backends.base.base import BaseDatabaseWrapper

_TABLE = "lens_auditevent"
_HEAD = "lens_audithead"
_PURGE = "lens_auditpurge"
_REFUSED = "the audit log is append-only"
_BACK = "the audit chain head never goes back"
# No apostrophe: the texts are quoted inside the SQL.
_OWNER_ONLY = "purging an audit log is for the owner of its tables only"

_SQLITE_CREATE = [
    f"CREATE TRIGGER IF NOT EXISTS lens_audit_no_update BEFORE UPDATE ON {_TABLE} "
    f"BEGIN SELECT RAISE(ABORT, '{_REFUSED}: UPDATE refused'); END",
    f"CREATE TRIGGER IF NOT EXISTS lens_audit_no_delete BEFORE DELETE ON {_TABLE} "
    f"WHEN NOT EXISTS (SELECT 1 FROM {_PURGE} WHERE team_id = OLD.team_id) "
    f"BEGIN SELECT RAISE(ABORT, '{_REFUSED}: DELETE refused'); END",
    # Bugs and mistaken queries only: whoever holds the file can drop these too.
    f"CREATE TRIGGER IF NOT EXISTS lens_audit_head_no_back BEFORE UPDATE ON {_HEAD} "
    "WHEN NEW.seq < OLD.seq OR NEW.team_id <> OLD.team_id "
    f"BEGIN SELECT RAISE(ABORT, '{_BACK}: UPDATE refused'); END",
    f"CREATE TRIGGER IF NOT EXISTS lens_audit_head_no_delete BEFORE DELETE ON {_HEAD} "
    f"WHEN NOT EXISTS (SELECT 1 FROM {_PURGE} WHERE team_id = OLD.team_id) "
    f"BEGIN SELECT RAISE(ABORT, '{_BACK}: DELETE refused'); END",
]
_SQLITE_DROP = [
    "DROP TRIGGER IF EXISTS lens_audit_no_update",
    "DROP TRIGGER IF EXISTS lens_audit_no_delete",
    "DROP TRIGGER IF EXISTS lens_audit_head_no_back",
    "DROP TRIGGER IF EXISTS lens_audit_head_no_delete",
]

# Whether the user running the statement owns the trigger's table (or may act as its
# owner: a member of the owning role, a superuser). Everything named is qualified: a
# trigger runs with the caller's search_path, and a temporary table of the caller's
# own named lens_auditpurge would otherwise come first.
_IS_OWNER = (
    "pg_catalog.pg_has_role(current_user, (SELECT c.relowner FROM pg_catalog.pg_class c "
    "WHERE c.oid = TG_RELID), 'MEMBER')"
)


def _purging(schema: str) -> str:
    return f"EXISTS (SELECT 1 FROM {schema}.{_PURGE} p WHERE p.team_id = OLD.team_id)"


def _postgres_create(schema: str) -> list[str]:
    return [
        # The events: never updated; deleted only by the owner, during a team's deletion.
        f"""CREATE OR REPLACE FUNCTION {schema}.lens_audit_append_only() RETURNS trigger
        LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP = 'DELETE' AND {_IS_OWNER} AND {_purging(schema)} THEN
                RETURN OLD;
            END IF;
            RAISE EXCEPTION '{_REFUSED}: % refused to %', TG_OP, current_user;
        END $$""",
        f"CREATE TRIGGER lens_audit_append_only BEFORE UPDATE OR DELETE ON {schema}.{_TABLE} "
        f"FOR EACH ROW EXECUTE FUNCTION {schema}.lens_audit_append_only()",
        f"CREATE TRIGGER lens_audit_no_truncate BEFORE TRUNCATE ON {schema}.{_TABLE} "
        f"FOR EACH STATEMENT EXECUTE FUNCTION {schema}.lens_audit_append_only()",
        # The chain head: only ever forward, on its own team; deleted as the events are.
        f"""CREATE OR REPLACE FUNCTION {schema}.lens_audit_head_guard() RETURNS trigger
        LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP = 'DELETE' AND {_IS_OWNER} AND {_purging(schema)} THEN
                RETURN OLD;
            END IF;
            RAISE EXCEPTION '{_BACK}: % refused to %', TG_OP, current_user;
        END $$""",
        # WHEN is evaluated without calling the function: an append's forward move
        # costs a comparison.
        f"CREATE TRIGGER lens_audit_head_no_back BEFORE UPDATE ON {schema}.{_HEAD} "
        "FOR EACH ROW WHEN (NEW.seq < OLD.seq OR NEW.team_id <> OLD.team_id) "
        f"EXECUTE FUNCTION {schema}.lens_audit_head_guard()",
        f"CREATE TRIGGER lens_audit_head_no_delete BEFORE DELETE ON {schema}.{_HEAD} "
        f"FOR EACH ROW EXECUTE FUNCTION {schema}.lens_audit_head_guard()",
        f"CREATE TRIGGER lens_audit_head_no_truncate BEFORE TRUNCATE ON {schema}.{_HEAD} "
        f"FOR EACH STATEMENT EXECUTE FUNCTION {schema}.lens_audit_head_guard()",
        # The purge marker: written and removed by the owner only (a team's deletion).
        f"""CREATE OR REPLACE FUNCTION {schema}.lens_audit_purge_guard() RETURNS trigger
        LANGUAGE plpgsql AS $$
        BEGIN
            IF {_IS_OWNER} THEN
                IF TG_LEVEL = 'STATEMENT' THEN
                    RETURN NULL;
                ELSIF TG_OP = 'DELETE' THEN
                    RETURN OLD;
                END IF;
                RETURN NEW;
            END IF;
            RAISE EXCEPTION '{_OWNER_ONLY}: % refused to %', TG_OP, current_user;
        END $$""",
        f"CREATE TRIGGER lens_audit_purge_owner_only BEFORE INSERT OR UPDATE OR DELETE "
        f"ON {schema}.{_PURGE} FOR EACH ROW EXECUTE FUNCTION {schema}.lens_audit_purge_guard()",
        f"CREATE TRIGGER lens_audit_purge_no_truncate BEFORE TRUNCATE ON {schema}.{_PURGE} "
        f"FOR EACH STATEMENT EXECUTE FUNCTION {schema}.lens_audit_purge_guard()",
    ]


def _postgres_drop(schema: str) -> list[str]:
    return [
        f"DROP TRIGGER IF EXISTS lens_audit_append_only ON {schema}.{_TABLE}",
        f"DROP TRIGGER IF EXISTS lens_audit_no_truncate ON {schema}.{_TABLE}",
        f"DROP TRIGGER IF EXISTS lens_audit_head_no_back ON {schema}.{_HEAD}",
        f"DROP TRIGGER IF EXISTS lens_audit_head_no_delete ON {schema}.{_HEAD}",
        f"DROP TRIGGER IF EXISTS lens_audit_head_no_truncate ON {schema}.{_HEAD}",
        f"DROP TRIGGER IF EXISTS lens_audit_purge_owner_only ON {schema}.{_PURGE}",
        f"DROP TRIGGER IF EXISTS lens_audit_purge_no_truncate ON {schema}.{_PURGE}",
    ]


def _schema(connection: BaseDatabaseWrapper) -> str:
    """The schema the tables were made in (the connection's current one), quoted."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_catalog.quote_ident(pg_catalog.current_schema())")
        return str(cursor.fetchone()[0])


def _run(connection: BaseDatabaseWrapper, statements: list[str]) -> None:
    with connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)


def install(connection: BaseDatabaseWrapper) -> None:
    """Create the triggers (again); a no-op where they exist."""
    if connection.vendor == "postgresql":
        schema = _schema(connection)
        _run(connection, [*_postgres_drop(schema), *_postgres_create(schema)])
    elif connection.vendor == "sqlite":
        _run(connection, _SQLITE_CREATE)


def uninstall(connection: BaseDatabaseWrapper) -> None:
    """Drop the triggers: only ``flush`` does, to empty the whole database."""
    if connection.vendor == "postgresql":
        _run(connection, _postgres_drop(_schema(connection)))
    elif connection.vendor == "sqlite":
        _run(connection, _SQLITE_DROP)
