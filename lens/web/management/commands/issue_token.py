from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from lens.models import ApiToken, Team


class Command(BaseCommand):
    help = "Issue a new API token for a team; the token is the last line of output."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug", help="The team's slug")
        parser.add_argument("--name", default="", help="A note to recognise the token by")

    def handle(self, *args: Any, slug: str, name: str, **opts: Any) -> None:
        team = Team.objects.filter(slug=slug).first()
        if team is None:
            raise CommandError(f"No team {slug!r}; create it with create_team")
        try:
            token, raw = ApiToken.objects.issue(team, name=name)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        self.stderr.write(f"Token {token.prefix}… for team {team.slug}; it is shown only once.")
        self.stdout.write(raw)
