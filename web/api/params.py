"""Rules for the values a request's query and body carry, shared by the routers."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from memory.core.deliveries import parse_moment

# What the database's integer columns hold (SPEC §8): a larger offset, limit or version
# is a 422, never a database error.
INT_MAX = 2**31 - 1


def iso_8601(value: Any) -> Any:
    """An ISO 8601 date and time, as an aware UTC datetime (a validator)."""
    # pydantic would also take a bare number as Unix time; the contract says ISO 8601.
    if value is None or isinstance(value, datetime):
        return value
    moment = parse_moment(value) if isinstance(value, str) else None
    if moment is None:
        raise ValueError(f"must be an ISO 8601 date and time, not {value!r}")
    return moment
