from typing import Any

from django.db import migrations

# The audit triggers again (``lens.audit_guard``), now also on the chain head and the
# purge marker, and on PostgreSQL letting events, heads and markers go only at the
# hands of the tables' owner: a login granted DELETE could otherwise write a purge
# marker and cut a team's log. Going back leaves them: they refuse nothing the product
# before this did as the owner.


def _guard(apps: Any, schema_editor: Any) -> None:
    from lens.audit_guard import install

    install(schema_editor.connection)


class Migration(migrations.Migration):
    dependencies = [
        ("lens", "0006_agent_model"),
    ]

    operations = [
        migrations.RunPython(_guard, migrations.RunPython.noop),
    ]
