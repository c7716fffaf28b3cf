"""A delivery's prompt-cache figures (SPEC §17), counted once, when it is recorded.

The figures compare the prompt with the agent's delivery just before it. That one's
prompt and token ids are usually still in the token counter's cache (its delivery
tokenised it, and stored the hash they are found by); otherwise its stored composition
is read, and only the lines around the first difference are tokenised
(``lens.core.token_counts.shared_token_prefix``). A previous prompt redacted by an erasure is always read
back, redacted: the erased words count for nothing after the erasure, whether a
process still holds them or not.

Each delivery's previous is exact also when deliveries of one agent arrive together:
from reading the previous delivery until it commits, a delivery holds a lock of its
agent's timeline (PostgreSQL; SQLite's write lock serialises them anyway), so the
deliveries read their previous in the order they are recorded.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from lens.core.cache_prefix import CachePrefix, FirstChange, cache_prefix
from lens.core.token_counts import token_ids, tokenised_by_sha256
from memory.core.composition import Composition
from memory.core.deliveries import prompt_of_json
from memory.models import Delivery, StoredComposition

# Off only in the benchmark that measures what the figures cost a delivery (then
# deliveries are recorded as before, with NULL figures): never in the product.
ENABLED = True

# The timeline lock's key: a constant of this feature in the high bits ("TIME"), the
# agent's id in the low ones (as ``erasure_lock``'s, whose constant differs).
_KEY_BASE = 0x54494D45 << 32
_LOW_BITS = 0xFFFFFFFF


def timeline_key(agent_id: int) -> int:
    """The key of the lock that records ``agent_id``'s deliveries one at a time, from
    when it is taken to the commit (PostgreSQL's ``pg_advisory_xact_lock``, taken with
    the erasure lock in one statement: ``memory.deliveries.ledger``)."""
    return _KEY_BASE | (agent_id & _LOW_BITS)


@dataclass(frozen=True)
class Previous:
    """What the next delivery needs of the agent's newest one."""

    delivered_at: datetime
    composition_id: int
    prompt_sha256: str
    redacted: bool


def newest(agent_id: int) -> Previous | None:
    """The agent's newest delivery (one lookup on the timeline's index, and its
    composition by primary key)."""
    row = (
        Delivery.objects.filter(agent_id=agent_id)
        .order_by("-delivered_at")
        .values_list(
            "delivered_at",
            "composition_id",
            "composition__prompt_sha256",
            "composition__redacted_at",
        )
        .first()
    )
    if row is None:
        return None
    delivered_at, composition_id, prompt_sha256, redacted_at = row
    return Previous(delivered_at, composition_id, prompt_sha256, redacted_at is not None)


def measure(
    composition: Composition, stored: StoredComposition, previous: Previous | None
) -> CachePrefix:
    """``composition``'s figures (``stored`` is its row) against ``previous``."""
    prompt = composition.prompt
    if previous is not None and previous.prompt_sha256 == stored.prompt_sha256:
        # The same prompt (an unchanged agent's usual case): all of it is shared, and
        # its stored counts say how much that is (``tokens``: its ids, counted whole).
        return CachePrefix(stored.tokens, stored.chars, stored.tokens, None)
    text = prompt.text
    ids = token_ids(text)  # composing counted them: found by the text's hash
    before: tuple[str, Any] | None = None
    if previous is not None:
        known = None if previous.redacted else tokenised_by_sha256(previous.prompt_sha256)
        if known is not None:
            before = (known.text, known.ids)
        else:  # only the lines around the change will be tokenised
            before = (_stored_prompt(previous.composition_id), None)
    return cache_prefix(before, text, ids, prompt.sections, composition.background)


def _stored_prompt(composition_id: int) -> str:
    body = StoredComposition.objects.values_list("body", flat=True).get(pk=composition_id)
    return prompt_of_json(zlib.decompress(bytes(body)).decode("utf-8"))


def columns(figures: CachePrefix | None) -> dict[str, Any]:
    """A delivery row's cache columns for ``figures`` (None: not counted)."""
    change = None if figures is None else figures.first_change
    return {
        "cache_prefix_tokens": None if figures is None else figures.prefix_tokens,
        "cache_prefix_chars": None if figures is None else figures.prefix_chars,
        "changed_section": None if change is None else change.section,
        "changed_background_section": None if change is None else change.background_section,
    }


def figures_of(delivery: Delivery) -> CachePrefix | None:
    """The figures ``delivery`` was recorded with (None: recorded before they were
    kept). Reads its composition's token count: select it with the row."""
    if delivery.cache_prefix_tokens is None or delivery.cache_prefix_chars is None:
        return None
    change = (
        None
        if delivery.changed_section is None
        else FirstChange(delivery.changed_section, delivery.changed_background_section)
    )
    return CachePrefix(
        prefix_tokens=delivery.cache_prefix_tokens,
        prefix_chars=delivery.cache_prefix_chars,
        total_tokens=delivery.composition.tokens,
        first_change=change,
    )
