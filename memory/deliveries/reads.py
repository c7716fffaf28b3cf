"""What a delivery reads, in as few statements as its guarantees allow.

Before its transaction, one statement (``token_with_agent``): the token (``lens.api_tokens``),
the agent the path names in the token's team, and the agent's composition stamp and
newest revision number, what a kept composition is judged by (``memory.composed``).

In its transaction, once its locks are held (``memory.deliveries.ledger``), one more
(``delivery_reads``): the stamp and the revision number again, the stored composition of
the digest about to be delivered (held FOR KEY SHARE on PostgreSQL, against a prune), and
the agent's newest delivery (what the prompt-cache figures compare with). A new statement
after the locks, so under READ COMMITTED it sees every change committed before they were
granted: an erasure that went first shows as another stamp.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any, TypeVar

from django.db import connection, models

from lens.api_tokens import TOKEN_FROM, TOKEN_SELECT, TOKEN_WHERE, TOKEN_WIDTH, token_from_row
from lens.models import Agent, ApiToken, Revision, hash_token
from lens.sql import statement_cursor
from memory.deliveries.cache_figures import Previous
from memory.models import CompositionStamp, Delivery, StoredComposition
from memory.stamps import Stamp

_STAMPS = CompositionStamp._meta.db_table
_REVISIONS = Revision._meta.db_table
_STORED = StoredComposition._meta.db_table
_DELIVERIES = Delivery._meta.db_table


@cache
def _agent_columns() -> tuple[str, ...]:
    # Every column, in the model's field order, as ``Model.from_db`` reads them.
    return tuple(str(field.column) for field in Agent._meta.concrete_fields)


# The stored composition without its two large columns (the body, tens of kilobytes
# compressed, and its memory ids): a delivery answers with the text it composed, and
# they load if something asks.
_LARGE = frozenset({"body", "memory_ids"})


@cache
def _stored_fields() -> tuple[Any, ...]:
    return tuple(
        field for field in StoredComposition._meta.concrete_fields if field.name not in _LARGE
    )


def _newest_revision(agent: str) -> str:
    return f"(SELECT r.number FROM {_REVISIONS} r WHERE r.agent_id = {agent} ORDER BY r.number DESC LIMIT 1)"


# What the agent carries besides its columns, by the names ``memory.composed.stamped``
# and ``lens.agents.with_revision_number`` give them.
_READ_WITH = ("stamp_read", "config_stamp_read", "revision_number")


@cache
def _token_agent() -> str:
    return (
        TOKEN_SELECT
        + "".join(f", a.{column}" for column in _agent_columns())
        + ", s.stamp, s.config_stamp, "
        + _newest_revision("a.id")
        + TOKEN_FROM
        + f" LEFT JOIN {Agent._meta.db_table} a ON a.team_id = t.team_id AND a.slug = %s"
        + f" LEFT JOIN {_STAMPS} s ON s.agent_id = a.id"
        + TOKEN_WHERE
    )


@dataclass(frozen=True)
class TokenAgent:
    token: ApiToken
    # With ``stamp_read``, ``config_stamp_read`` and ``revision_number`` set, as
    # ``memory.composed.stamped_agent(..., revision=True)`` reads it; None: the token's
    # team has no agent of that slug.
    agent: Agent | None


def token_with_agent(raw: str, slug: str) -> TokenAgent | None:
    """The live API token ``raw`` is, with its team's agent ``slug`` (a valid slug), the
    agent's stamps and its newest revision number; None for a token that is not live."""
    if not raw:
        return None
    with statement_cursor() as cursor:
        cursor.execute(_token_agent(), [slug, hash_token(raw)])
        row = cursor.fetchone()
    if row is None:
        return None
    token = token_from_row(row)
    columns = _agent_columns()
    end = TOKEN_WIDTH + len(columns)
    values = row[TOKEN_WIDTH:end]
    if values[0] is None:
        return TokenAgent(token, None)
    agent = _instance(Agent, values, Agent._meta.concrete_fields)
    agent.team = token.team  # read with the token
    for name, value in zip(_READ_WITH, row[end : end + len(_READ_WITH)], strict=True):
        setattr(agent, name, value)
    return TokenAgent(token, agent)


@cache
def _in_transaction(vendor: str) -> str:
    stored = [str(field.column) for field in _stored_fields()]
    lock = " FOR KEY SHARE" if vendor == "postgresql" else ""
    # The stored composition locked where it is read (PostgreSQL): a row a prune deleted
    # while this waited for its lock is skipped (READ COMMITTED), and the delivery
    # stores it again (``ledger._held``).
    return (
        f"WITH held AS (SELECT {', '.join(stored)} FROM {_STORED} "
        f"WHERE agent_id = %s AND digest = %s{lock}), "
        f"newest AS (SELECT d.delivered_at, d.composition_id FROM {_DELIVERIES} d "
        "WHERE d.agent_id = %s ORDER BY d.delivered_at DESC LIMIT 1) "
        "SELECT s.stamp, s.config_stamp, "
        + _newest_revision("%s")
        + ", n.delivered_at, n.composition_id, p.prompt_sha256, p.redacted_at"
        + "".join(f", h.{column}" for column in stored)
        + f" FROM (SELECT 1) one LEFT JOIN {_STAMPS} s ON s.agent_id = %s"
        " LEFT JOIN newest n ON true"
        f" LEFT JOIN {_STORED} p ON p.id = n.composition_id"
        " LEFT JOIN held h ON true"
    )


@dataclass(frozen=True)
class DeliveryReads:
    stamp: Stamp | None
    revision: int  # 0: none yet
    # The stored composition of the digest asked for, held until the commit (None: none).
    stored: StoredComposition | None
    previous: Previous | None


def delivery_reads(agent_id: int, digest: str) -> DeliveryReads:
    """One statement, in the delivery's transaction after its locks (module docstring)."""
    with statement_cursor() as cursor:
        cursor.execute(
            _in_transaction(connection.vendor),
            [agent_id, digest, agent_id, agent_id, agent_id],
        )
        row: Any = cursor.fetchone()
    values = row[7:]
    stored = None if values[0] is None else _instance(StoredComposition, values, _stored_fields())
    stamp = None if row[0] is None or row[1] is None else (int(row[0]), int(row[1]))
    delivered_at, composition_id, prompt_sha256, redacted_at = row[3:7]
    previous = (
        None
        if delivered_at is None
        else Previous(
            _datetime(delivered_at), composition_id, prompt_sha256, redacted_at is not None
        )
    )
    return DeliveryReads(stamp, int(row[2] or 0), stored, previous)


def _datetime(value: Any) -> datetime:
    converted: datetime = _value(Delivery._meta.get_field("delivered_at"), value)
    return converted


_M = TypeVar("_M", bound=models.Model)


def _instance(model: type[_M], values: Sequence[Any], fields: Sequence[Any]) -> _M:
    """``model``'s row from a raw cursor's ``values`` (of ``fields``, in the model's
    order; the others deferred), each converted as the ORM converts it (SQLite hands out
    text for times, integers for booleans)."""
    converted = [_value(field, value) for field, value in zip(fields, values, strict=True)]
    return model.from_db(connection.alias, [str(field.attname) for field in fields], converted)


def _value(field: Any, value: Any) -> Any:
    if value is None:
        return None
    column = field.get_col(field.model._meta.db_table)
    for converter in [
        *connection.ops.get_db_converters(column),
        *field.get_db_converters(connection),
    ]:
        value = converter(value, column, connection)
    return value
