"""What a save over the API reads before its transaction, as one statement: the token
(``lens.api_tokens``), the agent the path names in the token's team, and that agent's
section declarations (the routing context). A row per declaration, in the
declarations' order; one row with no declaration when the agent declares none, or
when the team has no such agent; none for a token that is not live.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import connection

from lens.api_tokens import TOKEN_FROM, TOKEN_SELECT, TOKEN_WHERE, TOKEN_WIDTH, token_from_row
from lens.models import Agent, ApiToken, SectionDeclaration, hash_token
from lens.sql import statement_cursor
from memory.core.routing import DeclaredSection, RoutingContext

# What a save reads of its agent; the rest loads if something asks (it costs a query).
# In the model's field order, as ``Model.from_db`` reads them.
_AGENT_COLUMNS = ("id", "team_id", "slug", "routing_spec")

_TOKEN_AGENT = (
    TOKEN_SELECT
    + "".join(f", a.{column}" for column in _AGENT_COLUMNS)
    + ", d.section_id, d.title, d.promotion"
    + TOKEN_FROM
    + f" LEFT JOIN {Agent._meta.db_table} a ON a.team_id = t.team_id AND a.slug = %s"
    + f" LEFT JOIN {SectionDeclaration._meta.db_table} d ON d.agent_id = a.id"
    + TOKEN_WHERE
    + " ORDER BY d.position, d.id"
)


@dataclass(frozen=True)
class SaveReads:
    token: ApiToken
    # None: the token's team has no agent of that slug.
    agent: Agent | None
    ctx: RoutingContext


def token_with_agent(raw: str, slug: str) -> SaveReads | None:
    """The live API token ``raw`` is, with its team's agent ``slug`` (a valid slug) and
    the agent's routing context; None for a token that is not live."""
    if not raw:
        return None
    with statement_cursor() as cursor:
        cursor.execute(_TOKEN_AGENT, [slug, hash_token(raw)])
        rows = cursor.fetchall()
    if not rows:
        return None
    first = rows[0]
    token = token_from_row(first)
    width = len(_AGENT_COLUMNS)
    agent_values = first[TOKEN_WIDTH : TOKEN_WIDTH + width]
    if agent_values[0] is None:
        return SaveReads(token, None, RoutingContext())
    agent = Agent.from_db(connection.alias, _AGENT_COLUMNS, agent_values)
    agent.team = token.team  # read with the token
    sections = tuple(
        DeclaredSection(id=row[-3], title=row[-2], promotion=row[-1])
        for row in rows
        if row[-3] is not None
    )
    return SaveReads(token, agent, RoutingContext(sections=sections))
