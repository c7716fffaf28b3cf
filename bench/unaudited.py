"""The production application with the audit log's appends made no-ops: only for
measuring what appending costs (``bench.audit_http``). Never served otherwise."""

from __future__ import annotations

import os
from typing import Any

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lens.settings")
django.setup()

import lens.audit  # noqa: E402
from lens.inserts import insert_unless_taken  # noqa: E402


def _skip(team_id: int, actor: Any, entries: object, *, first: Any = None) -> bool:
    # The change's own row is still written (a delivery's goes with its event).
    return first is None or insert_unless_taken(first)


# Every writer calls ``append`` through this module (``append_one`` looks it up when
# called), or imports it after this line: the routes are imported with the URLconf.
lens.audit.append = _skip  # the point of this module

from lens.serving.served import application  # noqa: E402

__all__ = ["application"]
