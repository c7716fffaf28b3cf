"""Revisions: every change of an agent's declarations, versioned and attributed (SPEC §14).

``record_revision`` is the one function that writes a revision; every path that changes
declarations (the API, each admin form and action, a restore) calls it in the change's
own transaction, after the change, with the config as it now reads. A change that
changes nothing writes nothing. Configs are stored once per content
(``StoredConfig``), so an agent restored to an older config holds it only once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import orjson
from django.db import transaction
from django.db.models import Exists, QuerySet
from django.utils import timezone

from lens.actors import Actor
from lens.agents import ValidatedCache, config_of, with_config
from lens.audit import Entry, append, append_one
from lens.core.change_words import titled
from lens.core.config import AgentConfig
from lens.core.errors import DomainError
from lens.core.revisions import canonical_config, config_sha256, summarise
from lens.models import Agent, Proposal, ProposalStatus, Revision, StoredConfig, Via


class RevisionNotFound(DomainError):
    code = "revision_not_found"


class RevisionConflict(DomainError):
    """``if_revision`` named a revision that is no longer the agent's newest."""

    code = "revision_conflict"

    def __init__(self, expected: int, current: int) -> None:
        super().__init__(
            f"The agent is at revision {current}, not {expected}: read it again and "
            "reapply your change.",
            current_revision=current,
        )


# Configs parsed from stored text, by their SHA-256: the newest revision's config is the
# "before" of the next change, so an agent edited again and again parses it once.
_parsed: ValidatedCache[AgentConfig] = ValidatedCache(max_weight=20_000)


def _weight(text: str) -> int:
    return len(text) // 1000 + 1  # about a kilobyte an entry, as the rows' caches count


def stored_config(holder: Revision | Proposal) -> AgentConfig:
    """The whole config ``holder`` (a revision, or a proposal) recorded. Its text is
    read only when the config is not parsed already (a holder read without it, as
    ``record_revision`` reads the newest revision, reads it then)."""
    found = _parsed.find(holder.config_id)
    if found is not None:
        return found
    text = holder.config.text
    return _parsed.get(
        holder.config_id,
        _weight(text),
        lambda: AgentConfig.model_validate_json(text),
    )


def keep_config(digest: str, text: str) -> None:
    """Store a config's canonical ``text`` under its ``digest``, once however often."""
    # One statement whether or not the config is stored already (get_or_create takes
    # four, and reads the whole text back when it is).
    StoredConfig.objects.bulk_create(
        [StoredConfig(sha256=digest, text=text)], ignore_conflicts=True
    )


def remember_parsed(digest: str, text: str, config: AgentConfig) -> None:
    """``config`` is the one stored as ``text``: it need not be parsed again."""
    _parsed.get(digest, _weight(text), lambda: config)


def stale_reason(current: int) -> str:
    return f"The agent moved to revision {current} before this was published."


def mark_stale(agent: Agent, current: int) -> int:
    """Every pending proposal of ``agent`` made on a revision before ``current`` can no
    longer be published: it is marked stale (each an audit event). Returns how many."""
    waiting = Proposal.objects.filter(
        agent=agent, status=ProposalStatus.PENDING, base_revision__lt=current
    )
    ids = list(waiting.values_list("pk", flat=True))
    if not ids:
        return 0
    Proposal.objects.filter(pk__in=ids).update(
        status=ProposalStatus.STALE, decided_at=timezone.now(), reason=stale_reason(current)
    )
    append(
        agent.team_id,
        "system",
        [proposal_entry("proposal.stale", agent, pk, revision=current) for pk in ids],
    )
    return len(ids)


def proposal_entry(action: str, agent: Agent, proposal_id: int, **details: Any) -> Entry:
    return Entry(action, "proposal", str(proposal_id), agent.slug, details)


def newest_revision(agent: Agent) -> Revision | None:
    """``agent``'s newest revision (None before its first), with its stored config."""
    return Revision.objects.filter(agent=agent).order_by("-number").select_related("config").first()


def current_number(agent: Agent) -> int:
    """The number of ``agent``'s newest revision, 0 before its first."""
    newest = Revision.objects.filter(agent=agent).order_by("-number").values_list("number")[:1]
    return next(iter(newest), (0,))[0]


_T = TypeVar("_T")
# An agent read without its revision number (not through ``with_config``) is read again.
_UNSET = object()
# Reads of an agent's config that a change may interleave with before one gives a pair.
_PAIR_ATTEMPTS = 3


def at_one_revision(
    agent: Agent, read: Callable[[Agent], _T], attempts: int
) -> tuple[Agent, _T, int] | None:
    """``read(agent)`` with the number of the revision the agent's declarations were at
    (0: none yet), and the agent it read; None when a change interleaved every time.

    The number read with the agent's row (``with_config``) still being the newest after
    ``read`` means no change committed in between: a config and its revision commit
    together. Otherwise the agent is read again and ``read`` runs again.
    """
    for _attempt in range(attempts):
        value = read(agent)
        newest = current_number(agent)
        if getattr(agent, "revision_number", _UNSET) == (newest or None):
            return agent, value, newest
        agent = with_config(Agent.objects.filter(pk=agent.pk).select_related("team")).get()
    return None


def revised_config(agent: Agent) -> tuple[AgentConfig, int]:
    """``agent``'s config with the number of the revision it is (0: none yet), as a
    pair; when changes keep interleaving, the newest revision's own stored config."""
    found = at_one_revision(agent, config_of, _PAIR_ATTEMPTS)
    if found is not None:
        return found[1], found[2]
    revision = newest_revision(agent)
    if revision is None:
        return config_of(agent), 0
    return stored_config(revision), revision.number


def record_revision(
    agent: Agent,
    actor: Actor,
    via: Via,
    *,
    config: AgentConfig | None = None,
    approved_by: str | None = None,
    locked: bool = False,
    audit: bool = True,
) -> Revision | None:
    """Write the revision for the change just made to ``agent``, or nothing when its
    config is the same as its newest revision's. ``config`` is the config as it now
    reads (read again from the rows when not given). Runs in the caller's transaction
    and locks the agent's row, so two changes to one agent number their revisions in
    the order they commit, with no gap (``locked``: the caller holds that lock in this
    transaction already, as every change begun with ``start_change`` does). ``audit``
    False: the caller appends an event of its own that names the revision (an import's
    ``agent.created``), so none is appended here.
    """
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("record_revision runs in the transaction of the change it records")
    if not locked:
        # The agent's row is the lock that orders its revisions (writers of its config
        # take it too); revision numbers are then read and written under it.
        Agent.objects.select_for_update().only("pk").get(pk=agent.pk)
    if config is None:
        config = config_of(with_config(Agent.objects.filter(pk=agent.pk)).get())
    text = canonical_config(config)
    digest = config_sha256(text)
    # Without its config's text: the config it is compared with is parsed already
    # after the agent's last change in this process (``remember_parsed``), and the
    # text of the 2,000-entry agent is 218 KB. Whether any proposal waits comes in the
    # same read, so a change of an agent with none (most) does not look for them again.
    newest = (
        Revision.objects.filter(agent=agent)
        .order_by("-number")
        .only("number", "config")
        .annotate(
            waiting=Exists(Proposal.objects.filter(agent=agent, status=ProposalStatus.PENDING))
        )
        .first()
    )
    if newest is not None and newest.config_id == digest:
        return None
    before = stored_config(newest) if newest is not None else None
    keep_config(digest, text)
    remember_parsed(digest, text, config)
    revision = Revision.objects.create(
        agent=agent,
        number=newest.number + 1 if newest is not None else 1,
        created_at=timezone.now(),
        actor=actor.label,
        via=via,
        approved_by=approved_by,
        config_id=digest,
        summary=[change.as_json() for change in summarise(before, config)],
    )
    if audit:
        _audit_revision(agent, actor, revision)
    # A proposal made on an older revision can never be published now: say so at once,
    # so the queue does not offer it. (Before its first revision an agent has nothing
    # to compare with: proposals are looked for then too.)
    if newest is None or newest.waiting:
        mark_stale(agent, revision.number)
    return revision


def _audit_revision(agent: Agent, actor: Actor, revision: Revision) -> None:
    append_one(
        agent.team_id,
        actor,
        Entry(
            "agent.created" if revision.number == 1 else "agent.revised",
            "agent",
            agent.slug,
            agent.slug,
            {
                "revision": revision.number,
                "via": revision.via,
                "approved_by": revision.approved_by,
                "config_sha256": revision.config_id,
                "changes": len(revision.summary),
            },
        ),
    )


def revisions_of(agent: Agent) -> QuerySet[Revision]:
    """``agent``'s revisions, newest first."""
    return Revision.objects.filter(agent=agent).order_by("-number")


def get_revision(agent: Agent, number: int) -> Revision:
    found = Revision.objects.filter(agent=agent, number=number).select_related("config").first()
    if found is None:
        raise RevisionNotFound(f"Agent {agent.slug!r} has no revision {number}.")
    return found


@dataclass(frozen=True)
class RevisionPage:
    revisions: list[Revision]
    total: int


def revision_page(agent: Agent, limit: int, offset: int) -> RevisionPage:
    """One page of ``agent``'s revisions, newest first. Numbers have no gaps, so the
    total is the newest number: one indexed read however many there are."""
    rows = list(revisions_of(agent)[offset : offset + limit])
    return RevisionPage(revisions=rows, total=current_number(agent))


# --- the words of each revision's own time -------------------------------------------

# Section titles by id of stored configs, by their SHA-256 (a config never changes): the
# words of a revision name its sections as its own config and the one before it did.
_titles: ValidatedCache[dict[str, str]] = ValidatedCache(max_weight=50_000)
_SECTION_CHANGE = "section_"
TEXTS_AT_ONCE = 16


def _titles_weight(titles: dict[str, str]) -> int:
    return len(titles) // 10 + 1


def _section_titles(text: str) -> dict[str, str]:
    """The section titles of a stored config's canonical text, without validating the
    whole config (a 2,000-entry config is parsed in about a millisecond)."""
    sections = orjson.loads(text).get("background", {}).get("sections", [])
    return {str(section["id"]): str(section["title"]) for section in sections}


def titles_of(digests: set[str]) -> dict[str, dict[str, str]]:
    """The section titles of each stored config named, by digest: those not read before
    in one query."""
    found: dict[str, dict[str, str]] = {}
    for digest in digests:
        cached = _titles.find(digest)
        if cached is not None:
            found[digest] = cached
    missing = digests - found.keys()
    if missing:
        # A few texts at a time: the configs of a 2,000-entry agent are 218 KB each, and
        # only their titles are kept.
        rows = StoredConfig.objects.filter(sha256__in=missing).values_list("sha256", "text")
        for digest, text in rows.iterator(chunk_size=TEXTS_AT_ONCE):
            found[digest] = _kept_titles(digest, _section_titles(text))
    return found


def _kept_titles(digest: str, titles: dict[str, str]) -> dict[str, str]:
    return _titles.get(digest, _titles_weight(titles), lambda: titles)


def summaries_then(
    agent: Agent,
    summaries: Mapping[int, Sequence[Mapping[str, Any]]],
    configs: Mapping[int, str] | None = None,
) -> dict[int, list[Mapping[str, Any]]]:
    """Each summary (by revision number) with its sections named as they were called
    at that revision (``change_words.titled``): from that revision's own config and the
    one before it, never the agent's titles now. ``configs``: the config digests of
    revisions the caller has read already, by number. Summaries that name no section
    are given back as they are; the rest take at most two queries in all, however many
    there are (at most ``2 × len(summaries)`` configs, whose titles are kept once read)."""
    wanted = {
        number
        for number, summary in summaries.items()
        if any(str(c.get("change", "")).startswith(_SECTION_CHANGE) for c in summary)
    }
    result: dict[int, list[Mapping[str, Any]]] = {n: list(s) for n, s in summaries.items()}
    if not wanted:
        return result
    numbers = wanted | {number - 1 for number in wanted if number > 1}
    digests = {n: configs[n] for n in numbers if configs is not None and n in configs}
    unread = numbers - digests.keys()
    if unread:
        digests.update(
            Revision.objects.filter(agent=agent, number__in=unread).values_list(
                "number", "config_id"
            )
        )
    titles = titles_of(set(digests.values()))
    for number in wanted:
        after = titles.get(digests.get(number, ""), {})
        before = titles.get(digests.get(number - 1, ""), {}) if number > 1 else {}
        result[number] = titled(summaries[number], before, after)
    return result
