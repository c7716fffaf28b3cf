from __future__ import annotations

from typing import Any

from django.db import migrations

# Keys list in code-point order. SQLite's default BINARY collation already is that order;
# PostgreSQL needs an index in the "C" collation for prefix ranges and ORDER BY to use it.
FORWARD = 'CREATE INDEX kv_key_order ON kvstore_key (team_id, key COLLATE "C")'
BACKWARD = "DROP INDEX IF EXISTS kv_key_order"


def forward(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(FORWARD)


def backward(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(BACKWARD)


class Migration(migrations.Migration):
    dependencies = [("kvstore", "0001_initial")]
    operations = [migrations.RunPython(forward, backward)]
