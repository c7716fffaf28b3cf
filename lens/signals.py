"""Audit events for the changes Django's own forms make (the admin's team page, the
commands): memberships and tokens, and a team's deletion taking its log with it.

Operations of the product call ``lens.audit.append`` themselves; these rows are also
written by the admin's generic inlines, so their events hang on the rows' own signals.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models.signals import post_delete, post_save, pre_delete, pre_save
from django.dispatch import receiver
from django.utils import timezone

from lens.audit import Entry, acting_label, allow_purge, append_one, end_purge
from lens.models import ApiToken, AuditPurge, Membership, Team


@receiver(pre_delete, sender=Team)
def _purge_log(sender: Any, instance: Team, **kwargs: Any) -> None:
    allow_purge(instance.pk)


@receiver(post_delete, sender=Team)
def _purged(sender: Any, instance: Team, **kwargs: Any) -> None:
    # After the commit: the team's memberships and tokens may go after the team row
    # (the deletion's order is the collector's), and their events must not be logged.
    team_id = instance.pk
    transaction.on_commit(lambda: end_purge(team_id))


def _log(team_id: int, entry: Entry) -> None:
    if AuditPurge.objects.filter(team_id=team_id).exists():
        return  # its team is being deleted, log and all
    # Saved in autocommit (a command's get_or_create): its event commits right after it.
    with transaction.atomic(savepoint=False):
        append_one(team_id, acting_label(), entry)


def _member_entry(action: str, membership: Membership) -> Entry:
    # The person may be going with the membership (a user's deletion cascades).
    username = (
        get_user_model()
        .objects.filter(pk=membership.user_id)
        .values_list("username", flat=True)
        .first()
    )
    return Entry(
        action,
        "user",
        username or f"user {membership.user_id}",
        details={"role": membership.role},
    )


@receiver(post_save, sender=Membership)
def _member_added(sender: Any, instance: Membership, created: bool, **kwargs: Any) -> None:
    if created:
        _log(instance.team_id, _member_entry("member.added", instance))


@receiver(post_delete, sender=Membership)
def _member_removed(sender: Any, instance: Membership, **kwargs: Any) -> None:
    _log(instance.team_id, _member_entry("member.removed", instance))
    if AuditPurge.objects.filter(team_id=instance.team_id).exists():
        return  # the team goes, its tokens with it
    # A person's tokens act as them in this team: they stop with their membership, in
    # its transaction (at most ``TOKENS_PER_PERSON`` live ones).
    held = ApiToken.objects.filter(
        team_id=instance.team_id, user_id=instance.user_id, revoked_at__isnull=True
    ).select_related("user")
    for token in held:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])  # logs token.revoked (below)


def _token_entry(action: str, token: ApiToken) -> Entry:
    # The prefix identifies a token; the name is a note, the digest a secret's hash. A
    # person's token names its person (SPEC §14 "Whose token"); a service token, nobody.
    details: dict[str, Any] = {"token_id": token.pk}
    owner = token.user if token.user_id is not None else None
    if owner is not None:
        details["owner"] = owner.get_username()
    return Entry(action, "token", token.prefix, details=details)


_REVOKING = "_lens_revoking"


@receiver(pre_save, sender=ApiToken)
def _note_revocation(sender: Any, instance: ApiToken, **kwargs: Any) -> None:
    revoking = bool(
        instance.pk is not None
        and instance.revoked_at is not None
        and ApiToken.objects.filter(pk=instance.pk, revoked_at__isnull=True).exists()
    )
    setattr(instance, _REVOKING, revoking)  # read by the post_save receiver below


@receiver(post_save, sender=ApiToken)
def _token_saved(sender: Any, instance: ApiToken, created: bool, **kwargs: Any) -> None:
    if created:
        _log(instance.team_id, _token_entry("token.issued", instance))
    elif getattr(instance, _REVOKING, False):
        _log(instance.team_id, _token_entry("token.revoked", instance))


@receiver(post_delete, sender=ApiToken)
def _token_deleted(sender: Any, instance: ApiToken, **kwargs: Any) -> None:
    if instance.revoked_at is None:
        _log(instance.team_id, _token_entry("token.revoked", instance))
