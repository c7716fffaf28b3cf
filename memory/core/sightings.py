"""Earned sections (SPEC §19.1): when a save is a sighting of an earning memory, and
how many distinct sessions have seen it. Pure.

A memory routed to an ``earned`` section waits, ``pending`` with reason ``earning``,
until the same content has been saved in ``EARNED_SIGHTINGS`` distinct sessions (itself
included). Content is compared after normalisation, so "Prefers  tea" and "prefers tea"
are one sighting; a save without a session counts its UTC day as its session.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

DEFAULT_EARNED_SIGHTINGS = 3

_WHITESPACE = re.compile(r"\s+")


def normalised(content: str) -> str:
    """``content`` as sightings compare it: NFKC, casefolded, whitespace runs collapsed
    to one space, trimmed. Idempotent: casefolding can produce text NFKC changes again,
    so both run until nothing changes (at most a few rounds)."""
    text = content
    while True:
        folded = _WHITESPACE.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()
        if folded == text:
            return folded
        text = folded


def same_content(a: str, b: str) -> bool:
    return normalised(a) == normalised(b)


@dataclass(frozen=True, slots=True)
class Sighting:
    """One save of an earning memory's content: the holder's own, or a sighting's."""

    memory_id: str
    session: str | None
    created_at: datetime


def session_of(session: str | None, created_at: datetime) -> str:
    """What tells sightings apart: the session the model named, else the save's UTC day.
    The two never collide: a day is prefixed with a character no session may hold."""
    if session is not None:
        return "s:" + session
    moment = created_at if created_at.tzinfo is not None else created_at.replace(tzinfo=UTC)
    return "\x00day:" + moment.astimezone(UTC).date().isoformat()


def counted(sightings: Iterable[Sighting]) -> list[Sighting]:
    """The sightings that count, oldest first (ties by id): each one whose session
    differs from every earlier sighting's."""
    seen: set[str] = set()
    kept = []
    for sighting in sorted(sightings, key=lambda s: (s.created_at, s.memory_id)):
        token = session_of(sighting.session, sighting.created_at)
        if token not in seen:
            seen.add(token)
            kept.append(sighting)
    return kept


def distinct_sessions(sightings: Iterable[Sighting]) -> int:
    return len(counted(sightings))


def has_earned(sightings: Iterable[Sighting], needed: int) -> bool:
    """Whether the holder and its sightings have been seen in ``needed`` sessions."""
    return distinct_sessions(sightings) >= needed
