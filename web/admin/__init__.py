"""The admin: Django finds this module (``web`` is an app) and each import below
registers its model admins.

- ``agent_admin``: teams, agents, section declarations and authored entries, edited with
  the API's rules (``declaration_forms``), ordered with arrows (``ordering``), kept as
  typed (``line_breaks``), with new rows named (``row_names``).
- ``memory_admin``: memories and promotions, read-only; decisions happen in the lens.
- ``routing_case_admin``: an agent's routing cases, each change through
  ``replace_cases`` (the API's checks, the audit event).
- ``webhook_admin``: webhook endpoints, added and deleted through their operations
  (the URL guard, the audit), the secret shown once; read-only otherwise.
"""

from __future__ import annotations

from web.admin import agent_admin, memory_admin, routing_case_admin, webhook_admin

__all__ = ["agent_admin", "memory_admin", "routing_case_admin", "webhook_admin"]
