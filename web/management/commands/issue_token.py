from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from lens.core.errors import DomainError
from lens.models import Team
from lens.token_issuing import issue_token


class Command(BaseCommand):
    help = (
        "Issue a new API token for a team; the token is the last line of output. With "
        "--user it belongs to that person (a member of the team): a change made with it is "
        "theirs, and on a protected agent proposed by them, who never decides it. Without, "
        "it is a service token, named by its --name."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug", help="The team's slug")
        parser.add_argument("--name", default="", help="A note to recognise the token by")
        parser.add_argument(
            "--user", default=None, help="The username of the member the token belongs to"
        )

    def handle(self, *args: Any, slug: str, name: str, user: str | None, **opts: Any) -> None:
        team = Team.objects.filter(slug=slug).first()
        if team is None:
            raise CommandError(f"No team {slug!r}; create it with create_team")
        person = None
        if user is not None:
            person = get_user_model().objects.filter(username=user).first()
            if person is None:
                raise CommandError(f"No user {user!r}: nothing was issued.")
        try:
            issued = issue_token(team, name, user=person)
        except DomainError as exc:
            raise CommandError(exc.message) from None
        whose = f" belonging to {person.get_username()}" if person is not None else ""
        self.stderr.write(
            f"Token {issued.token.prefix}… for team {team.slug}{whose}; it is shown only once."
        )
        self.stdout.write(issued.raw)
