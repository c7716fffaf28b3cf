"""The words for why a memory is or is not in the prompt, from facts already gathered. Pure.

The routing report names one reason code per memory left out (SPEC §5.6). People need
more than the code: the authored entry that wins, the memory that replaced it, what the
budget had left, who rejected it and why. This module turns those facts into one
sentence, with the places it names marked as links, and holds the one vocabulary every
page uses for a memory's state: "In the prompt" or "Not in the prompt" and a reason.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from lens.core.text import collapse
from memory.core.outcome import INSTRUCTION_SHAPED

# Beyond the routing report's reasons: an approved memory whose stored row no longer
# reads as a record (skipped by every reader), and a record with no routing outcome.
UNREADABLE = "unreadable"
UNROUTED = "unrouted"

# Headers of the lens's groups of memories left out, by reason.
GROUP_TITLES: dict[str, str] = {
    "erased": "Erased",
    "superseded": "Replaced by a newer memory",
    "expired": "Expired",
    "spec-declined": "Recall only",
    "undeclared-section": "Section not declared",
    "locked-section": "Locked section",
    "earning": "Earning its place",
    "corroborating": "Seen again, its memory not in the prompt",
    "awaiting-approval": "Waiting for approval",
    "rejected": "Rejected",
    "revoked": "Revoked",
    "authored-wins": "An authored entry wins",
    "reconciled": "Another memory won its place",
    "over-budget": "Over the memory budget",
    UNREADABLE: "Unreadable",
    UNROUTED: "Not routed",
}

# The few words after "not in the prompt" where a whole sentence does not fit (lists).
SHORT_WORDS: dict[str, str] = {
    "erased": "erased",
    "superseded": "superseded",
    "expired": "expired",
    "spec-declined": "recall only",
    "undeclared-section": "section not declared",
    "locked-section": "locked section",
    "earning": "earning its place",
    "corroborating": "seen again, its memory out",
    "awaiting-approval": "waiting for approval",
    "rejected": "rejected",
    "revoked": "revoked",
    "authored-wins": "authored entry wins",
    "reconciled": "another memory won",
    "over-budget": "over budget",
    UNREADABLE: "unreadable",
    UNROUTED: "not routed",
}

Tone = Literal["in", "wait", "note", "quiet"]

# How a state reads: composed (green), waiting on a person (amber), held out by the
# agent's own configuration (neutral), or settled and out of play (muted). Never red:
# none of these is an error.
_TONES: dict[str, Tone] = {
    "awaiting-approval": "wait",
    "earning": "wait",
    "corroborating": "wait",
    "erased": "quiet",
    "superseded": "quiet",
    "expired": "quiet",
    "spec-declined": "quiet",
    "rejected": "quiet",
    "revoked": "quiet",
}

IN_PROMPT = "In the prompt"
NOT_IN_PROMPT = "Not in the prompt"

# Long values and snippets inside a sentence are cut to this many characters.
QUOTE_CHARS = 90

LinkKind = Literal["memory", "approvals"]


@dataclass(frozen=True, slots=True)
class Link:
    """Where a piece of a sentence leads: a memory (by id) or an agent's approval queue
    (by agent slug). Pages turn it into a URL."""

    kind: LinkKind
    target: str


@dataclass(frozen=True, slots=True)
class Piece:
    text: str
    link: Link | None = None


@dataclass(frozen=True, slots=True)
class Facts:
    """What is known about one memory's place, gathered by the service."""

    memory_id: str
    # None: the memory is in the prompt; otherwise a drop reason, UNREADABLE or UNROUTED.
    reason: str | None = None
    kind: str = ""
    agent: str = ""  # the agent's slug, for the approval queue
    section: str | None = None
    section_title: str | None = None
    key: str | None = None
    tier: str | None = None
    # authored-wins: the authored entry's value (its key is ``key``).
    authored_value: str | None = None
    # superseded: the newer memory; reconciled: the memory holding the address.
    other_id: str | None = None
    other_words: str | None = None  # its label, or the start of its content
    # over-budget: the characters its line needs, those left, and the budget.
    needed: int | None = None
    left: int | None = None
    budget: int | None = None
    # spec-declined: the routing spec that declined it (empty: the agent had none).
    spec_key: str = ""
    spec_version: str = ""
    # awaiting-approval: since when, and why the system held it back when it would have
    # approved it ("instruction-shaped", SPEC §19.4; empty: its section is guarded).
    since: datetime | None = None
    held: str = ""
    # expired: when its validity window closed.
    valid_until: datetime | None = None
    # rejected, revoked: who decided (None: unknown), when, and their reason; erased:
    # who erased it, when and why.
    decided_by: str | None = None
    decided_at: datetime | None = None
    note: str = ""  # the decision's reason; awaiting-approval: the reopening's
    # awaiting-approval after a reviewer reopened it: who, and when (None: never reopened).
    reopened_by: str | None = None
    reopened_at: datetime | None = None
    # earning, corroborating: the distinct sessions that saved its content so far and
    # how many it needs (SPEC §19.1); corroborating: ``other_id`` is the memory it saw
    # again, and ``other_reason`` why that memory is not in the prompt (its drop reason:
    # earning, awaiting-approval, over-budget, rejected, revoked, expired, ...).
    seen: int | None = None
    needed_sessions: int | None = None
    other_reason: str | None = None


@dataclass(frozen=True, slots=True)
class Explanation:
    facts: Facts
    pieces: tuple[Piece, ...]

    @property
    def memory_id(self) -> str:
        return self.facts.memory_id

    @property
    def in_prompt(self) -> bool:
        return self.facts.reason is None

    @property
    def reason(self) -> str:
        """The reason code, or "" for a memory in the prompt."""
        return self.facts.reason or ""

    @property
    def state(self) -> str:
        """ "In the prompt" or "Not in the prompt"."""
        return IN_PROMPT if self.in_prompt else NOT_IN_PROMPT

    @property
    def sentence(self) -> str:
        return "".join(piece.text for piece in self.pieces)

    @property
    def short(self) -> str:
        return short_words(self.facts.reason)

    @property
    def tone(self) -> Tone:
        return tone_of(self.facts.reason)

    @property
    def place(self) -> str:
        """Where it lands or would land: "About the User → name" ("" for nowhere)."""
        facts = self.facts
        if facts.section is None:
            return ""
        where = facts.section_title or facts.section
        return f"{where} → {facts.key}" if facts.key else where

    @property
    def links(self) -> tuple[Link, ...]:
        return tuple(piece.link for piece in self.pieces if piece.link is not None)


def short_words(reason: str | None) -> str:
    """ "in the prompt", or the few words for why not ("waiting for approval")."""
    if reason is None:
        return "in the prompt"
    return SHORT_WORDS.get(reason, reason)


def group_title(reason: str) -> str:
    return GROUP_TITLES.get(reason, reason)


def tone_of(reason: str | None) -> Tone:
    if reason is None:
        return "in"
    return _TONES.get(reason, "note")


def utc(moment: datetime) -> str:
    """An absolute time people can compare: ``2025-05-01 14:03 UTC``."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    elif moment.utcoffset():
        moment = moment.astimezone(UTC)
    # isoformat is several times cheaper than strftime, and the lens says this per drop.
    return moment.isoformat(" ", "minutes")[:16] + " UTC"


def chars(number: int) -> str:
    """A count with thousands separators: ``3,000``."""
    return f"{number:,}"


def quoted(text: str, limit: int = QUOTE_CHARS) -> str:
    """``text`` on one line in quotes, cut with an ellipsis past ``limit`` characters."""
    line = " ".join(collapse(text).split())
    if len(line) > limit:
        line = line[: limit - 1].rstrip() + "…"
    return f"“{line}”"


def stop(quote: str) -> str:
    """The full stop after a quote, unless the quoted words already end a sentence."""
    return "" if quote.rstrip("”").endswith((".", "!", "?", "…")) else "."


def explain(facts: Facts) -> Explanation:
    """The sentence saying where ``facts``' memory is, or what keeps it out."""
    words = _in_prompt if facts.reason is None else _WORDS.get(facts.reason, _unknown)
    return Explanation(facts, tuple(words(facts)))


# --- one sentence per state --------------------------------------------------------

_Words = Callable[[Facts], list[Piece]]


def _section(facts: Facts) -> str:
    """The section as people know it: its title, or its id when it has none now."""
    if facts.section_title:
        return facts.section_title
    return facts.section or "its section"


def _in_prompt(facts: Facts) -> list[Piece]:
    if facts.key is None:
        return [Piece(f"It is part of {_section(facts)}.")]
    return [Piece(f"It fills “{facts.key}” in {_section(facts)}.")]


def _superseded(facts: Facts) -> list[Piece]:
    if facts.other_id is None:
        return [Piece("A newer memory replaced it.")]
    words = quoted(facts.other_words) if facts.other_words else f"memory {facts.other_id}"
    return [
        Piece("A newer memory replaced it: "),
        Piece(words, Link("memory", facts.other_id)),
        Piece(stop(words)),
    ]


def _expired(facts: Facts) -> list[Piece]:
    if facts.valid_until is None:
        return [Piece("Its validity window has closed.")]
    return [Piece(f"It was valid until {facts.valid_until:%Y-%m-%d %H:%M} UTC, which has passed.")]


def _spec_declined(facts: Facts) -> list[Piece]:
    if not facts.spec_key:
        return [
            Piece(
                "The agent had no routing spec when it was saved, so it stays recall-only "
                "(search and recall still find it)."
            )
        ]
    version = f" v{facts.spec_version}" if facts.spec_version else ""
    kind = f"of kind “{facts.kind}”" if facts.kind else "of its kind"
    return [
        Piece(
            f"The routing spec {facts.spec_key}{version} does not place memories {kind}, "
            "so it stays recall-only (search and recall still find it)."
        )
    ]


def _undeclared(facts: Facts) -> list[Piece]:
    section = facts.section or "?"
    key = f" as “{facts.key}”" if facts.key else ""
    return [
        Piece(f"It was routed to the section {section}{key}, which this agent does not declare.")
    ]


def _locked(facts: Facts) -> list[Piece]:
    return [Piece(f"{_section(facts)} is a locked section: memory never fills it.")]


def seen_in(seen: int | None, needed: int | None) -> str:
    """ "seen in 2 of 3 sessions" (a sighting's count includes the memory itself); once
    the count has reached what earns a place, "seen in 5 sessions (3 earn a place)"."""
    if seen is None or needed is None:
        return "seen in too few sessions yet"
    if seen < needed:
        noun = "session" if needed == 1 else "sessions"
        return f"seen in {seen} of {needed} {noun}"
    noun = "session" if seen == 1 else "sessions"
    verb = "earns" if needed == 1 else "earn"
    return f"seen in {seen} {noun} ({needed} {verb} a place)"


def _earning(facts: Facts) -> list[Piece]:
    needed = facts.needed_sessions
    return [
        Piece(
            f"{_section(facts)} is earned: this memory enters the prompt once it has been "
            f"saved in {needed or 'enough'} distinct sessions. It has been "
            f"{seen_in(facts.seen, needed)}."
        )
    ]


# Why the memory a sighting saw again is out, said of it: "It saw again X, which ...".
_HOLDER_STATES: dict[str, str] = {
    "awaiting-approval": "waits for a reviewer's approval",
    "rejected": "a reviewer rejected",
    "revoked": "a reviewer took out of the prompt",
    "over-budget": "is approved but does not fit in the memory budget",
    "authored-wins": "is approved but an authored entry holds its key",
    "reconciled": "is approved but another memory won its place",
    "expired": "has expired: its validity window has closed",
    "superseded": "a newer memory replaced",
    "erased": "was erased",
    "undeclared-section": "is in a section this agent no longer declares",
    "locked-section": "is in a section now locked",
}


def _corroborating(facts: Facts) -> list[Piece]:
    """Worded by the state of the memory it saw again: still earning its place, or out
    of the prompt for a reason of its own (approved but over budget, rejected, ...)."""
    state = _HOLDER_STATES.get(facts.other_reason or "")
    if facts.other_id is None:
        if state is None:
            return [Piece(f"It saw again a memory still earning its place in {_section(facts)}.")]
        return [
            Piece(
                f"It saw again a memory that {state}; it joins that memory's line once it composes."
            )
        ]
    words = quoted(facts.other_words) if facts.other_words else facts.other_id
    if state is None:
        tail = (
            f", which is {seen_in(facts.seen, facts.needed_sessions)} and joins "
            f"{_section(facts)} once it has earned its place."
        )
    else:
        tail = f", which {state}; this sighting joins its line once it is in the prompt."
    return [Piece("It saw again "), Piece(words, Link("memory", facts.other_id)), Piece(tail)]


def _awaiting(facts: Facts) -> list[Piece]:
    if facts.reopened_at is not None:
        # Reopening puts a memory back in the queue whatever its section's tier: an auto
        # section's memory waits for a person too, so the tier explains nothing here.
        who = facts.reopened_by or "a reviewer"
        note = quoted(facts.note, 200)
        why = f" ({note})" if facts.note.strip() else ""
        pieces = [
            Piece(
                f"Reopened by {who} on {utc(facts.reopened_at)}{why}; waits for a "
                "reviewer's decision."
            )
        ]
    elif facts.held == INSTRUCTION_SHAPED:
        since = f" since {utc(facts.since)}" if facts.since else ""
        pieces = [
            Piece(
                f"Waiting for approval{since}: it reads as an instruction to the model, "
                f"and the system never approves one, although {_section(facts)} is an "
                f"{facts.tier or 'auto'} section."
            )
        ]
    else:
        since = f" since {utc(facts.since)}" if facts.since else ""
        pieces = [
            Piece(
                f"Waiting for approval{since}: {_section(facts)} is a guarded section, "
                "where a person approves each memory."
            )
        ]
    if facts.agent:
        pieces += [
            Piece(" "),
            Piece("Review it in the approval queue", Link("approvals", facts.agent)),
            Piece("."),
        ]
    return pieces


def _decided(verb: str, facts: Facts, after: str = "") -> list[Piece]:
    who = facts.decided_by or "a reviewer"
    when = f" on {utc(facts.decided_at)}" if facts.decided_at else ""
    note = quoted(facts.note, 200)
    why = f": {note}{stop(note)}" if facts.note.strip() else "; no reason given."
    return [Piece(f"{verb} by {who}{when}{after}{why}")]


def _erased(facts: Facts) -> list[Piece]:
    who = facts.decided_by or "someone"
    when = f" on {utc(facts.decided_at)}" if facts.decided_at else ""
    note = quoted(facts.note, 200)
    why = f": {note}{stop(note)}" if facts.note.strip() else "."
    return [Piece(f"Erased by {who}{when}{why} Its content, label and tags are gone for good.")]


def _rejected(facts: Facts) -> list[Piece]:
    return _decided("Rejected", facts)


def _revoked(facts: Facts) -> list[Piece]:
    return _decided("Revoked", facts, ", after it was approved")


def _authored_wins(facts: Facts) -> list[Piece]:
    key = facts.key or "?"
    if facts.authored_value is None:
        value = "."
    else:
        value = quoted(facts.authored_value)
        value = f": {value}{stop(value)}"
    return [
        Piece(f"The authored entry “{key}” in {_section(facts)} holds the same key and wins{value}")
    ]


def _reconciled(facts: Facts) -> list[Piece]:
    where = f" (“{facts.key}” in {_section(facts)})" if facts.key else ""
    if facts.other_id is None:
        # No memory holds its place now: the spec's finalize step left it out.
        return [Piece(f"The routing spec left it out when composing{where}.")]
    words = quoted(facts.other_words) if facts.other_words else f"memory {facts.other_id}"
    return [
        Piece(f"Another memory at the same place{where} won: "),
        Piece(words, Link("memory", facts.other_id)),
        Piece(stop(words)),
    ]


def _over_budget(facts: Facts) -> list[Piece]:
    if facts.budget is None:
        return [Piece("Over the memory budget: the other memories use it all.")]
    if facts.needed is None or facts.left is None:
        return [Piece(f"Over the memory budget of {chars(facts.budget)} chars.")]
    return [
        Piece(
            f"Over the memory budget: its line needs {chars(facts.needed)} chars and "
            f"{chars(facts.left)} of {chars(facts.budget)} are left."
        )
    ]


def _unreadable(_facts: Facts) -> list[Piece]:
    return [
        Piece(
            "Its stored row no longer reads as a record (edited by hand, or an older "
            "shape), so the prompt skips it."
        )
    ]


def _unrouted(_facts: Facts) -> list[Piece]:
    return [Piece("It has no routing outcome, so nothing places it.")]


def _unknown(facts: Facts) -> list[Piece]:
    return [Piece(f"Left out: {facts.reason}.")]


_WORDS: dict[str, _Words] = {
    "erased": _erased,
    "superseded": _superseded,
    "expired": _expired,
    "spec-declined": _spec_declined,
    "undeclared-section": _undeclared,
    "locked-section": _locked,
    "earning": _earning,
    "corroborating": _corroborating,
    "awaiting-approval": _awaiting,
    "rejected": _rejected,
    "revoked": _revoked,
    "authored-wins": _authored_wins,
    "reconciled": _reconciled,
    "over-budget": _over_budget,
    UNREADABLE: _unreadable,
    UNROUTED: _unrouted,
}
