"""Each agent's composition stamp, and the triggers that change it with every row an
agent's composition is made of (``memory.models.CompositionStamp``).

Every change sets ``stamp``; a change of the declarations (the lens tables) sets
``config_stamp`` too, so a composition made after a change of memories alone may reuse
the declarations it read before.

PostgreSQL runs them as constraint triggers deferred to the commit: the stamp's row is
then locked only for the instant a transaction commits, never while it waits for other
rows, so a transaction about one agent (nearly all of them) adds no lock-order deadlock
to the writes it follows; each agent's stamp is set once per transaction, however many
rows changed; a TRUNCATE sets every stamp. SQLite runs them at once; its transactions
hold the database's one write lock throughout anyway.
"""

from __future__ import annotations

import django.db.models.deletion
from django.db import migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

STAMP = "memory_compositionstamp"
# The tables with the agent's id in a column, by that column.
BY_AGENT = {
    "memory_memoryrecord": "agent_id",
    "memory_promotion": "agent_id",
    "lens_sectiondeclaration": "agent_id",
    "lens_capability": "agent_id",
    "lens_awarenesssource": "agent_id",
    "lens_agent": "id",
}
# An authored entry names its section; the section names the agent.
ENTRY = "lens_authoredentry"


def _assign(table: str, random: str) -> str:
    """What a change of a row of ``table`` sets: the stamp, and the declarations' stamp
    when the row is one of the declarations."""
    if table.startswith("lens_"):
        return f"stamp = {random}, config_stamp = {random}"
    return f"stamp = {random}"


def _tables() -> dict[str, str]:
    return {**BY_AGENT, ENTRY: "section_id"}


def _part(table: str) -> str:
    return "config" if table.startswith("lens_") else "memory"


def _sqlite(rows: str, column: str) -> str:
    """The agents of one changed row, in a SQLite trigger (``rows``: NEW or OLD)."""
    if column == "section_id":
        return f"SELECT agent_id FROM lens_sectiondeclaration WHERE id = {rows}.section_id"
    return f"SELECT {rows}.{column}"


def sqlite_triggers() -> list[str]:
    statements = [
        # A new agent starts with a stamp of its own.
        "CREATE TRIGGER composition_stamp_lens_agent_insert AFTER INSERT ON lens_agent "
        f"BEGIN INSERT INTO {STAMP} (agent_id, stamp, config_stamp) "
        "VALUES (NEW.id, random(), random()); END"
    ]
    for table, column in _tables().items():
        for event, rows in (("INSERT", ("NEW",)), ("UPDATE", ("OLD", "NEW")), ("DELETE", ("OLD",))):
            if table == "lens_agent" and event != "UPDATE":
                continue  # its insert makes the stamp; its delete removes it
            agents = " UNION ".join(_sqlite(row, column) for row in rows)
            statements.append(
                f"CREATE TRIGGER composition_stamp_{table}_{event.lower()} AFTER {event} "
                f"ON {table} BEGIN UPDATE {STAMP} SET {_assign(table, 'random()')} "
                f"WHERE agent_id IN ({agents}); END"
            )
    return statements


# 63 random bits (random() draws 52 of them at a time).
_PG_RANDOM = "(floor(random() * 4503599627370496)::bigint << 11) # floor(random() * 2048)::bigint"


def postgresql_triggers() -> list[str]:
    statements = [
        f"""
        CREATE FUNCTION composition_stamp_new_agent() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            INSERT INTO {STAMP} (agent_id, stamp, config_stamp)
            VALUES (NEW.id, {_PG_RANDOM}, {_PG_RANDOM});
            RETURN NULL;
        END $$
        """,
        "CREATE TRIGGER composition_stamp_lens_agent_insert AFTER INSERT ON lens_agent "
        "FOR EACH ROW EXECUTE FUNCTION composition_stamp_new_agent()",
    ]
    # Once per agent and part per transaction: a new value at commit is all a reader
    # needs, and updating one row again for each of thousands of rows (an import, a
    # migration) would lengthen its version chain, each update slower than the last. A
    # transaction-local setting remembers it was done.
    statements.append(
        f"""
        CREATE FUNCTION composition_stamp_set(agent bigint, config boolean) RETURNS void
        LANGUAGE plpgsql AS $$
        DECLARE
            mark text := 'composition_stamp.' || CASE WHEN config THEN 'c' ELSE 'm' END || agent;
        BEGIN
            IF agent IS NULL OR current_setting(mark, true) = '1' THEN
                RETURN;
            END IF;
            IF config THEN
                UPDATE {STAMP} SET {_assign("lens_", _PG_RANDOM)} WHERE agent_id = agent;
                PERFORM set_config('composition_stamp.m' || agent, '1', true);
            ELSE
                UPDATE {STAMP} SET {_assign("memory_", _PG_RANDOM)} WHERE agent_id = agent;
            END IF;
            PERFORM set_config(mark, '1', true);
        END $$
        """
    )
    # One function per way of finding the agent and per what a change sets:
    # composition_stamp_<memory|config>_by_<column>().
    ways = {
        "agent_id": "{rows}.agent_id",
        "id": "{rows}.id",
        "section_id": "(SELECT agent_id FROM lens_sectiondeclaration WHERE id = {rows}.section_id)",
    }
    for part, column in sorted({(_part(table), column) for table, column in _tables().items()}):
        old, new = ways[column].format(rows="OLD"), ways[column].format(rows="NEW")
        config = "true" if part == "config" else "false"
        statements.append(
            f"""
            CREATE FUNCTION composition_stamp_{part}_by_{column}() RETURNS trigger
            LANGUAGE plpgsql AS $$
            BEGIN
                IF TG_OP <> 'INSERT' THEN
                    PERFORM composition_stamp_set({old}, {config});
                END IF;
                IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE' AND {new} IS DISTINCT FROM {old}) THEN
                    PERFORM composition_stamp_set({new}, {config});
                END IF;
                RETURN NULL;
            END $$
            """
        )
    # TRUNCATE fires no row trigger: every agent gets new stamps.
    statements.append(
        f"""
        CREATE FUNCTION composition_stamp_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            UPDATE {STAMP} SET {_assign("lens_", _PG_RANDOM)};
            RETURN NULL;
        END $$
        """
    )
    for table in _tables():
        statements.append(
            f"CREATE TRIGGER composition_stamp_{table}_truncate AFTER TRUNCATE ON {table} "
            "FOR EACH STATEMENT EXECUTE FUNCTION composition_stamp_truncated()"
        )
    for table, column in _tables().items():
        events = "UPDATE" if table == "lens_agent" else "INSERT OR UPDATE OR DELETE"
        statements.append(
            f"CREATE CONSTRAINT TRIGGER composition_stamp_{table} AFTER {events} ON {table} "
            "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW "
            f"EXECUTE FUNCTION composition_stamp_{_part(table)}_by_{column}()"
        )
    return statements


def create(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    vendor = schema_editor.connection.vendor
    statements = sqlite_triggers() if vendor == "sqlite" else postgresql_triggers()
    for statement in statements:
        schema_editor.execute(statement)
    # The agents there already: a stamp each.
    random = "random()" if vendor == "sqlite" else _PG_RANDOM
    schema_editor.execute(
        f"INSERT INTO {STAMP} (agent_id, stamp, config_stamp) "
        f"SELECT id, {random}, {random} FROM lens_agent"
    )


def drop(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    vendor = schema_editor.connection.vendor
    tables = list(_tables())
    if vendor == "sqlite":
        for table in tables:
            for event in ("insert", "update", "delete"):
                schema_editor.execute(f"DROP TRIGGER IF EXISTS composition_stamp_{table}_{event}")
        return
    for table in tables:
        schema_editor.execute(f"DROP TRIGGER IF EXISTS composition_stamp_{table} ON {table}")
        schema_editor.execute(
            f"DROP TRIGGER IF EXISTS composition_stamp_{table}_truncate ON {table}"
        )
    schema_editor.execute(
        "DROP TRIGGER IF EXISTS composition_stamp_lens_agent_insert ON lens_agent"
    )
    for part, column in {(_part(table), column) for table, column in _tables().items()}:
        schema_editor.execute(f"DROP FUNCTION IF EXISTS composition_stamp_{part}_by_{column}()")
    schema_editor.execute("DROP FUNCTION IF EXISTS composition_stamp_set(bigint, boolean)")
    schema_editor.execute("DROP FUNCTION IF EXISTS composition_stamp_truncated()")
    schema_editor.execute("DROP FUNCTION IF EXISTS composition_stamp_new_agent()")


class Migration(migrations.Migration):
    dependencies = [
        ("lens", "0008_apitoken_user_proposal_token"),
        ("memory", "0014_validity"),
    ]

    operations = [
        migrations.CreateModel(
            name="CompositionStamp",
            fields=[
                (
                    "agent",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="composition_stamp",
                        serialize=False,
                        to="lens.agent",
                    ),
                ),
                ("stamp", models.BigIntegerField()),
                ("config_stamp", models.BigIntegerField()),
            ],
            options={"db_table": "memory_compositionstamp"},
        ),
        migrations.RunPython(create, drop, elidable=False),
    ]
