from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction
from django.utils.text import slugify

from lens.models import Membership, Role, Team


class Command(BaseCommand):
    help = (
        "Create or update a team; --member adds an existing user (repeatable), --reviewer "
        "adds one who may decide the team's promotions (repeatable)."
    )

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
        parser.add_argument(
            "--reviewer",
            action="append",
            default=[],
            metavar="USERNAME",
            help="Add an existing user as a reviewer (a member who decides promotions).",
        )

    @transaction.atomic
    def handle(
        self,
        *args: Any,
        slug: str,
        name: str | None,
        member: list[str],
        reviewer: list[str],
        **opts: Any,
    ) -> None:
        if slugify(slug) != slug:
            raise CommandError(f"{slug!r} is not a valid slug (lowercase letters, digits, '-')")
        User = get_user_model()
        # A reviewer named with --member too stays a reviewer: the stronger role wins.
        roles = dict.fromkeys(member, Role.MEMBER)
        roles.update(dict.fromkeys(reviewer, Role.REVIEWER))
        users = []
        for username, role in roles.items():
            user = User.objects.filter(username=username).first()
            if user is None:
                raise CommandError(f"No user {username!r}; create it first (createsuperuser)")
            users.append((user, role))
        team, created = Team.objects.get_or_create(slug=slug, defaults={"name": name or slug})
        if name and team.name != name:
            team.name = name
            team.save(update_fields=["name"])
        for user, role in users:
            membership, _ = Membership.objects.get_or_create(
                team=team, user=user, defaults={"role": role}
            )
            # --reviewer promotes an existing member; --member never demotes a reviewer.
            if role == Role.REVIEWER and membership.role != Role.REVIEWER:
                membership.role = Role.REVIEWER
                membership.save(update_fields=["role"])
        verb = "Created" if created else "Updated"
        rows = list(
            team.memberships.order_by("user__username").values_list("user__username", "role")
        )
        members = ", ".join(name for name, _ in rows) or "none"
        reviewers = ", ".join(name for name, role in rows if role == Role.REVIEWER) or "none"
        self.stdout.write(
            f"{verb} team {team.slug} ({team.name}); members: {members}; reviewers: {reviewers}"
        )
