"""Issuing and revoking API tokens (SPEC §8, §14 "Whose token").

A token belongs to one team. It may also belong to a person, a member of that team: what
they do with it is theirs (``lens.actors.Actor.for_token``), so a change they propose
with it is proposed by them and they never decide it. A token issued for no person is a
service token, named by its label.

The audit events (``token.issued``, ``token.revoked``) are written by the token row's own
signals (``lens.signals``), through ``lens.audit``, in the transaction of each operation
here: the admin's inline and the commands save the same rows, and every path logs once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from lens.core.errors import DomainError
from lens.models import ApiToken, Membership, Team

# Live tokens one person may hold in one team: enough for every machine they work on,
# and a bound on the page that lists them.
TOKENS_PER_PERSON = 20
# Revoked tokens the page still lists, newest first.
REVOKED_SHOWN = 10
# A token's label, in characters: the column's own length.
NAME_MAX = ApiToken._meta.get_field("name").max_length or 0


class InvalidTokenName(DomainError):
    code = "invalid_token_name"


class NotAMember(DomainError):
    """A person's token is for a team they belong to."""

    code = "not_a_member"


class TooManyTokens(DomainError):
    code = "too_many_tokens"


class TokenNotFound(DomainError):
    code = "token_not_found"


@dataclass(frozen=True)
class Issued:
    token: ApiToken
    raw: str  # the token itself: shown once, never stored


def _checked_name(name: str) -> str:
    name = name.strip()
    if len(name) > NAME_MAX:
        raise InvalidTokenName(
            f"A token's label is at most {NAME_MAX} characters; this one has {len(name)}."
        )
    if any(ord(c) < 32 or c == "\x7f" for c in name):
        raise InvalidTokenName("A token's label is one line of text, without control characters.")
    return name


@transaction.atomic
def issue_token(team: Team, name: str = "", *, user: Any = None) -> Issued:
    """A new token of ``team``: ``user``'s (an active member of the team, holding fewer
    than ``TOKENS_PER_PERSON`` live ones there), or a service token (``user`` None).
    Raises InvalidTokenName, NotAMember or TooManyTokens, having written nothing."""
    name = _checked_name(name)
    if user is not None:
        # Their memberships, locked: two issues at once cannot both pass the count.
        member = (
            Membership.objects.select_for_update()
            .filter(team=team, user=user.pk, user__is_active=True)
            .first()
        )
        if member is None:
            raise NotAMember(
                f"{user.get_username()} is not an active member of team {team.slug}: a "
                "person's token is for a team they belong to."
            )
        held = ApiToken.objects.filter(team=team, user=user.pk, revoked_at__isnull=True).count()
        if held >= TOKENS_PER_PERSON:
            raise TooManyTokens(
                f"{user.get_username()} holds {held} live tokens in team {team.slug}, the "
                f"most one person may; revoke one first.",
                limit=TOKENS_PER_PERSON,
            )
    token, raw = ApiToken.objects.issue(team, name=name, user=user)
    return Issued(token, raw)


def tokens_of(team: Team, user: Any) -> tuple[list[ApiToken], list[ApiToken]]:
    """``user``'s own tokens in ``team``: the live ones (at most ``TOKENS_PER_PERSON``)
    and the ``REVOKED_SHOWN`` revoked most recently, newest first."""
    mine: QuerySet[ApiToken] = ApiToken.objects.filter(team=team, user=user.pk)
    live = list(
        mine.filter(revoked_at__isnull=True).order_by("-created_at", "-pk")[:TOKENS_PER_PERSON]
    )
    revoked = list(
        mine.filter(revoked_at__isnull=False).order_by("-revoked_at", "-pk")[:REVOKED_SHOWN]
    )
    return live, revoked


@dataclass(frozen=True)
class Revoked:
    token: ApiToken
    already: bool  # it was revoked before: nothing changed


@transaction.atomic
def revoke_own_token(team: Team, user: Any, token_id: int) -> Revoked:
    """``user`` revokes their own token ``token_id`` of ``team``: refused from the next
    request on. Another person's token, a service token or another team's is not found
    (raises TokenNotFound, having changed nothing)."""
    token = (
        ApiToken.objects.select_for_update()
        .filter(pk=token_id, team=team, user=user.pk)
        .select_related("team", "user")
        .first()
    )
    if token is None:
        raise TokenNotFound(f"You hold no token {token_id} in team {team.slug}.")
    if token.revoked_at is not None:
        return Revoked(token, already=True)
    token.revoked_at = timezone.now()
    token.save(update_fields=["revoked_at"])
    return Revoked(token, already=False)
