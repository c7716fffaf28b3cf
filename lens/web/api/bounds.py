"""Bounds every integer a request may carry: what the database's integer columns hold
(SPEC §8), so a larger offset, limit or version is a 422, never a database error."""

from __future__ import annotations

INT_MAX = 2**31 - 1
