"""Strictly increasing times within one agent's rows, whatever the clock does."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db.models import QuerySet
from django.utils import timezone


def after_newest(rows: QuerySet[Any], field: str) -> datetime:
    """Now, or a microsecond after the newest ``field`` of ``rows`` when the clock has
    not moved past it (or stepped back): one index lookup on ``field``'s index.
    """
    # ``field`` is a timestamp column of ``rows``' model (named at run time).
    newest: datetime | None = rows.order_by(f"-{field}").values_list(field, flat=True).first()
    return moment_after(newest)


def moment_after(newest: datetime | None) -> datetime:
    """Now, or a microsecond after ``newest`` when the clock has not moved past it."""
    now = timezone.now()
    if newest is not None and now <= newest:
        return newest + timedelta(microseconds=1)
    return now
