from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from kvstore.demo_keys import seed_kv
from lens.actors import Actor
from lens.core.config import AgentConfig
from lens.models import Agent, ApiToken, Membership, Role, Team
from memory.configuring import store_agent
from memory.demo.configs import DEMO_AGENTS
from memory.demo.edits import SECOND_PERSON, edited, tell_edits
from memory.demo.sessions import seed_history

DEMO_TEAM = "demo"
DEMO_USER = "demo"
DEMO_PASSWORD = "demo"
SEED_TOKEN = "demo seed"


class Command(BaseCommand):
    help = "Create (or refresh) the demo team, user and agents. Safe to run repeatedly."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--force",
            action="store_true",
            help="seed even with DEBUG off (the demo superuser's password is public)",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        # The demo superuser's password is printed here and in the README: never let it
        # into a production database by accident.
        if not settings.DEBUG and not opts["force"]:
            raise CommandError(
                f"Refusing to seed the demo with DEBUG off: it creates the superuser "
                f"'{DEMO_USER}' with the password '{DEMO_PASSWORD}'. Set DEBUG=1, or pass "
                f"--force if this database is meant to hold the demo."
            )
        # Read before seeding: a bad PORT is refused with nothing written.
        login_url = f"{base_url(os.environ)}/accounts/login/"
        self.seed(login_url)

    @transaction.atomic
    def seed(self, login_url: str) -> None:
        User = get_user_model()
        user, created = User.objects.get_or_create(
            username=DEMO_USER, defaults={"is_staff": True, "is_superuser": True}
        )
        if created:
            user.set_password(DEMO_PASSWORD)
            user.save()
        team, _ = Team.objects.get_or_create(slug=DEMO_TEAM, defaults={"name": "Demo Team"})
        Membership.objects.get_or_create(team=team, user=user)
        token = ApiToken.objects.filter(team=team, name=SEED_TOKEN).first()
        if token is None:
            token, _raw = ApiToken.objects.issue(team, name=SEED_TOKEN)
        second, made = User.objects.get_or_create(username=SECOND_PERSON)
        if made:
            second.set_unusable_password()  # a name in the history, not a login
            second.save()
        Membership.objects.get_or_create(team=team, user=second, defaults={"role": Role.REVIEWER})
        people = {DEMO_USER: Actor.for_user(user), SECOND_PERSON: Actor.for_user(second)}
        seeder = Actor.for_token(token)
        saved = delivered = revised = 0
        for slug, raw in DEMO_AGENTS.items():
            steps = edited(slug, raw)
            if Agent.objects.filter(team=team, slug=slug).exists():
                # Told already: keep the config its edits left (no new revision).
                final = steps[-1][1] if steps else raw
                agent, _ = store_agent(team, slug, AgentConfig.model_validate(final), actor=seeder)
                memories, deliveries = seed_history(agent, token, people[DEMO_USER])
            else:
                agent, _ = store_agent(team, slug, AgentConfig.model_validate(raw), actor=seeder)
                # The memories, with the sessions that were delivered between them.
                memories, deliveries = seed_history(agent, token, people[DEMO_USER])
                revised += tell_edits(agent, raw, people)
            saved += memories
            delivered += deliveries
        versions = seed_kv(team)
        self.stdout.write(
            f"Demo team '{team.slug}' with agents: {', '.join(DEMO_AGENTS)}"
            f" ({saved} new demo memories, {delivered} new deliveries, {revised} edits,"
            f" {versions} new key/value versions).\n"
            f"Log in at {login_url} as "
            f"{DEMO_USER} / {DEMO_PASSWORD}"
            + ("" if created else " (unless you changed that password)")
        )


# Addresses a server binds to that a browser cannot open: the loopback on the same family.
_WILDCARDS = {"0.0.0.0": "127.0.0.1", "::": "::1"}


def base_url(environ: Mapping[str, str]) -> str:
    """Where ``make run`` serves: the ``HOST`` and ``PORT`` it passes to the server
    (with the server's defaults, 127.0.0.1:8000), as a browser opens it.
    """
    host = environ.get("HOST") or "127.0.0.1"
    port = environ.get("PORT") or "8000"
    if not (port.isascii() and port.isdigit() and 1 <= int(port) <= 65535):
        raise CommandError(f"PORT must be a port number (1-65535), not {port!r}.")
    host = _WILDCARDS.get(host, host)
    try:
        literal = ipaddress.ip_address(host)
    except ValueError:
        literal = None
    if literal is not None and literal.version == 6:
        host = f"[{host}]"
    return f"http://{host}:{int(port)}"
