"""The production application with the audit log's appends made no-ops: only for
measuring what appending costs (``bench.audit_http``). Never served otherwise."""

from __future__ import annotations

import os
from typing import Any

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lens.settings")
django.setup()

import lens.audit  # noqa: E402


def _skip(team_id: int, actor: Any, entries: Any) -> None:
    return None


# Every writer calls ``append`` through this module (``append_one`` looks it up when
# called), or imports it after this line: the routes are imported with the URLconf.
lens.audit.append = _skip  # the point of this module

from lens.serving.served import application  # noqa: E402

__all__ = ["application"]
