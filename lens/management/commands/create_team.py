from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction
from django.utils.text import slugify

from lens.models import Membership, Team


class Command(BaseCommand):
    help = "Create or update a team; --member adds an existing user (repeatable)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("--name", help="Display name (defaults to the slug)")
        parser.add_argument(
            "--member",
            action="append",
            default=[],
            metavar="USERNAME",
            help="Add an existing user as a member; repeat for several.",
        )

    @transaction.atomic
    def handle(
        self, *args: Any, slug: str, name: str | None, member: list[str], **opts: Any
    ) -> None:
        if slugify(slug) != slug:
            raise CommandError(f"{slug!r} is not a valid slug (lowercase letters, digits, '-')")
        User = get_user_model()
        users = []
        for username in member:
            user = User.objects.filter(username=username).first()
            if user is None:
                raise CommandError(f"No user {username!r}; create it first (createsuperuser)")
            users.append(user)
        team, created = Team.objects.get_or_create(slug=slug, defaults={"name": name or slug})
        if name and team.name != name:
            team.name = name
            team.save(update_fields=["name"])
        for user in users:
            Membership.objects.get_or_create(team=team, user=user)
        verb = "Created" if created else "Updated"
        members = ", ".join(sorted(team.members.values_list("username", flat=True))) or "none"
        self.stdout.write(f"{verb} team {team.slug} ({team.name}); members: {members}")
