"""A revision's summary (SPEC §14) in words: the short phrases the revisions pages show,
"Persona changed", "Section Preferences (prefs) added", "Entry city in facts changed",
"Routing spec user-background → project". Pure.

Changes of one kind that follow each other are said in one phrase ("Entries city, tz and
pet in facts added"), naming the first few and counting the rest, so a revision that
adds 2,000 entries reads as a few lines, not 2,000. A summary is stored JSON: a kind this
code does not know is still said, from its name, never an error.

Sections are named as they were called at the revision's own time, never as they are
now: a change's own ``title`` (which ``titled`` fills in from the revision's config and
the one before it), and a retitle says which way it went, "Section “Rules” (rules)
retitled “House Rules”", from its ``from`` and ``to``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import Any

# How each declaration that is a field of its own is called in a phrase.
FIELD_NAMES = {
    "name": "Name",
    "persona": "Persona",
    "tone": "Tone",
    "objective": "Objective",
    "capabilities": "Capabilities",
    "manual": "Manual",
    "awareness": "Information sources",
    "recall_pinned_candidates": "Recall of pinned candidates",
    "protected": "Protection",
    "model": "Model",
}
# What happened, by kind of change: (the noun, its plural, the verb).
_SAID = {
    "section_added": ("Section", "Sections", "added"),
    "section_removed": ("Section", "Sections", "removed"),
    "section_moved": ("Section", "Sections", "moved"),
    "section_retitled": ("Section", "Sections", "retitled"),
    "section_retiered": ("Section", "Sections", "given another tier"),
    "entry_added": ("Entry", "Entries", "added"),
    "entry_removed": ("Entry", "Entries", "removed"),
    "entry_changed": ("Entry", "Entries", "changed"),
}
# Items one phrase names; past this many, the rest are counted ("and 9 more").
NAMED = 3


@dataclass(frozen=True)
class Words:
    """A summary in words: the phrases shown, and how many more were left out."""

    phrases: tuple[str, ...]
    more: int = 0


def in_words(
    summary: Sequence[Mapping[str, Any]],
    titles: Mapping[str, str] | None = None,
    *,
    created: bool = False,
    limit: int | None = None,
) -> Words:
    """``summary`` (a revision's list of changes) as phrases, at most ``limit`` of them.

    ``titles`` names sections by id ("Preferences (prefs)"); a section it does not
    name is called by its id. ``created``: the revision created the agent.
    """
    said = (["Agent created"] if created else []) + phrases(summary, titles or {})
    if created and len(said) == 1:
        said = ["Agent created, with no Background section"]
    if limit is None or len(said) <= limit:
        return Words(tuple(said))
    return Words(tuple(said[:limit]), len(said) - limit)


def phrases(summary: Sequence[Mapping[str, Any]], titles: Mapping[str, str]) -> list[str]:
    """One phrase for each run of changes of one kind (and, for entries, one section)."""
    said: list[str] = []
    for (kind, section), run in groupby(summary, key=_run_key):
        changes = list(run)
        if kind == "routing_spec_changed":
            said += [f"Routing spec {_spec(c.get('from'))} → {_spec(c.get('to'))}" for c in changes]
        elif kind == "field_changed":
            said.append(_fields([str(c.get("field")) for c in changes]))
        elif kind == "section_retitled":
            said += _retitles(changes, titles)
        elif kind in _SAID and kind.startswith("section_"):
            names = [_section(c, titles) for c in changes]
            said.append(_phrase(kind, names))
        elif kind in _SAID:
            keys = [str(c.get("key")) for c in changes]
            said.append(_phrase(kind, keys, f" in {section}"))
        else:  # a kind of change from a later version: its name says enough
            said += [kind.replace("_", " ").capitalize() or "Changed" for _ in changes]
    return said


def _run_key(change: Mapping[str, Any]) -> tuple[str, str]:
    kind = str(change.get("change", ""))
    return kind, str(change.get("section")) if kind.startswith("entry_") else ""


def _phrase(kind: str, names: list[str], where: str = "") -> str:
    one, many, verb = _SAID[kind]
    if len(names) == 1:
        return f"{one} {names[0]}{where} {verb}"
    return f"{many} {_listed(names)}{where} {verb}"


def _fields(fields: list[str]) -> str:
    names = [FIELD_NAMES.get(field, field) for field in fields]
    said = [names[0], *(name[:1].lower() + name[1:] for name in names[1:])]
    return f"{_listed(said)} changed"


def _listed(names: list[str]) -> str:
    """Names joined: a; a and b; a, b and c; a, b, c and 9 more."""
    if len(names) == 1:
        return names[0]
    if len(names) <= NAMED:
        return f"{', '.join(names[:-1])} and {names[-1]}"
    return f"{', '.join(names[:NAMED])} and {len(names) - NAMED} more"


def _section(change: Mapping[str, Any], titles: Mapping[str, str]) -> str:
    ident = str(change.get("section"))
    title = change.get("title") or titles.get(ident)
    return f"{title} ({ident})" if title and title != ident else ident


def _retitles(changes: list[Mapping[str, Any]], titles: Mapping[str, str]) -> list[str]:
    """A phrase for each of the first few retitles, from → to, and one counting the rest.
    A retitle stored without its titles (before they were kept) is said as before."""
    said = []
    for change in changes[:NAMED]:
        before, after = change.get("from"), change.get("to")
        if isinstance(before, str) and isinstance(after, str):
            ident = str(change.get("section"))
            said.append(f"Section “{before}” ({ident}) retitled “{after}”")
        else:
            said.append(_phrase("section_retitled", [_section(change, titles)]))
    if len(changes) > NAMED:
        more = len(changes) - NAMED
        said.append(f"{more} more section{'' if more == 1 else 's'} retitled")
    return said


def titled(
    summary: Sequence[Mapping[str, Any]], before: Mapping[str, str], after: Mapping[str, str]
) -> list[Mapping[str, Any]]:
    """``summary`` with each section named as it was then: ``after`` holds the section
    titles of the revision's own config, ``before`` those of the one before it (empty
    for the first). A section's change gets its ``title`` there (a removed one its last
    title), and a retitle its ``from`` and ``to`` when stored without them. What a change
    holds already is kept; entries name their section by id and are left as they are."""
    filled: list[Mapping[str, Any]] = []
    for change in summary:
        kind = str(change.get("change", ""))
        if not kind.startswith("section_") or change.get("title"):
            filled.append(change)
            continue
        ident = str(change.get("section"))
        title = before.get(ident) if kind == "section_removed" else after.get(ident)
        extra: dict[str, Any] = {"title": title} if title else {}
        if kind == "section_retitled" and "to" not in change and ident in before and ident in after:
            extra.update({"from": before[ident], "to": after[ident]})
        filled.append({**change, **extra} if extra else change)
    return filled


def _spec(key: object) -> str:
    return "none" if key is None else str(key)


def token_delta(before: int | None, after: int) -> str:
    """A prompt's size in tokens from one revision to another: "14,002 → 14,250 tokens
    (+248)"; ``before`` None when there is nothing before (the first revision)."""
    if before is None:
        return f"{after:,} token{'' if after == 1 else 's'}"
    change = after - before
    sign = "±" if change == 0 else "+" if change > 0 else "−"
    return f"{before:,} → {after:,} tokens ({sign}{abs(change):,})"
