"""The database's own refusal to change the audit log (SPEC §15): triggers that abort
every UPDATE and DELETE of an event (and, on PostgreSQL, a TRUNCATE of the table), except
the deletion of the events of a team that is being deleted (``lens.models.AuditPurge``).

What this protects against: a bug, a mistaken query, a script or a person with an
ordinary database login that edits or removes rows. What it does not: someone allowed
to drop triggers (the table's owner, a superuser, whoever holds the SQLite file) can
drop them first. The hash chain is what catches that (``verify_audit``): it cannot
stop the change, but it names the first event that no longer fits.
"""

from __future__ import annotations

from django.db.backends.base.base import BaseDatabaseWrapper

_TABLE = "lens_auditevent"
_PURGE = "lens_auditpurge"
_REFUSED = "the audit log is append-only"

_SQLITE_CREATE = [
    f"CREATE TRIGGER IF NOT EXISTS lens_audit_no_update BEFORE UPDATE ON {_TABLE} "
    f"BEGIN SELECT RAISE(ABORT, '{_REFUSED}: UPDATE refused'); END",
    f"CREATE TRIGGER IF NOT EXISTS lens_audit_no_delete BEFORE DELETE ON {_TABLE} "
    f"WHEN NOT EXISTS (SELECT 1 FROM {_PURGE} WHERE team_id = OLD.team_id) "
    f"BEGIN SELECT RAISE(ABORT, '{_REFUSED}: DELETE refused'); END",
]
_SQLITE_DROP = [
    "DROP TRIGGER IF EXISTS lens_audit_no_update",
    "DROP TRIGGER IF EXISTS lens_audit_no_delete",
]
_POSTGRES_CREATE = [
    f"""CREATE OR REPLACE FUNCTION lens_audit_append_only() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'DELETE' AND EXISTS (
            SELECT 1 FROM {_PURGE} WHERE team_id = OLD.team_id
        ) THEN
            RETURN OLD;
        END IF;
        RAISE EXCEPTION '{_REFUSED}: % refused', TG_OP;
    END $$""",
    f"CREATE TRIGGER lens_audit_append_only BEFORE UPDATE OR DELETE ON {_TABLE} "
    "FOR EACH ROW EXECUTE FUNCTION lens_audit_append_only()",
    f"CREATE TRIGGER lens_audit_no_truncate BEFORE TRUNCATE ON {_TABLE} "
    "FOR EACH STATEMENT EXECUTE FUNCTION lens_audit_append_only()",
]
_POSTGRES_DROP = [
    f"DROP TRIGGER IF EXISTS lens_audit_append_only ON {_TABLE}",
    f"DROP TRIGGER IF EXISTS lens_audit_no_truncate ON {_TABLE}",
]


def _run(connection: BaseDatabaseWrapper, statements: list[str]) -> None:
    with connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)


def install(connection: BaseDatabaseWrapper) -> None:
    """Create the triggers (again); a no-op where they exist."""
    if connection.vendor == "postgresql":
        _run(connection, [*_POSTGRES_DROP, *_POSTGRES_CREATE])
    elif connection.vendor == "sqlite":
        _run(connection, _SQLITE_CREATE)


def uninstall(connection: BaseDatabaseWrapper) -> None:
    """Drop the triggers: only ``flush`` does, to empty the whole database."""
    if connection.vendor == "postgresql":
        _run(connection, _POSTGRES_DROP)
    elif connection.vendor == "sqlite":
        _run(connection, _SQLITE_DROP)
