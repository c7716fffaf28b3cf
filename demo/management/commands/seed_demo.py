from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractUser, Permission
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from demo.configs import DEMO_AGENTS
from demo.edits import SECOND_PERSON, tell_edits
from demo.eval_cases import seed_cases
from demo.kv_keys import seed_kv
from demo.sessions import seed_history
from lens.actors import Actor
from lens.core.config import AgentConfig
from lens.models import Agent, ApiToken, Membership, Proposal, Revision, Role, Team
from memory.configuring import store_agent

DEMO_TEAM = "demo"
DEMO_USER = "demo"
DEMO_PASSWORD = "demo"
# The demo's second person, a reviewer of its team who logs in too: four eyes need two
# people, so each publishes what the other proposes. Public like the demo's.
SECOND_PASSWORD = SECOND_PERSON
SEED_TOKEN = "demo seed"
# What the second person may do in the admin: change the agents' declarations (a change
# of protected Sentinel is proposed), never delete an agent.
EDITOR_PERMISSIONS = (
    "view_agent",
    "add_agent",
    "change_agent",
    *(
        f"{action}_{model}"
        for model in ("sectiondeclaration", "authoredentry", "capability", "awarenesssource")
        for action in ("view", "add", "change", "delete")
    ),
)


@dataclass
class Seeded:
    """What one run wrote, counted from the rows themselves so the summary is true."""

    made: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    memories: int = 0
    deliveries: int = 0
    revisions: int = 0
    proposals: int = 0
    versions: int = 0
    cases: int = 0

    def words(self) -> str:
        said = [f"new agents {', '.join(self.made)}"] if self.made else []
        if self.kept:
            said.append(f"agents {', '.join(self.kept)} already there, left as they are")
        agents = "; ".join(said)
        return (
            f"{agents} ({self.memories} new demo memories, {self.deliveries} new deliveries,"
            f" {_counted(self.revisions, 'new revision')},"
            f" {_counted(self.proposals, 'new proposal')},"
            f" {_counted(self.cases, 'new routing case')},"
            f" {self.versions} new key/value versions)"
        )


def _counted(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


class Command(BaseCommand):
    help = (
        "Create the demo team, its two people and agents where missing. Safe to run "
        "repeatedly: what exists, and what people changed, is left as it is."
    )

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
        second, second_login = second_person(team)
        people = {DEMO_USER: Actor.for_user(user), SECOND_PERSON: Actor.for_user(second)}
        seeder = Actor.for_token(token)
        revisions = Revision.objects.filter(agent__team=team)
        proposals = Proposal.objects.filter(agent__team=team)
        revisions_before, proposals_before = revisions.count(), proposals.count()
        seeded = Seeded()
        for slug, raw in DEMO_AGENTS.items():
            agent = Agent.objects.filter(team=team, slug=slug).first()
            if agent is not None:
                # Its declarations are the team's now: a person may have changed them
                # (on a protected agent, through a published proposal). Storing the demo's
                # config again would revert that, or propose to. Only what was never made
                # is added: the memories and deliveries of an agent seeded before the
                # history existed.
                seeded.kept.append(slug)
            else:
                agent, _ = store_agent(team, slug, AgentConfig.model_validate(raw), actor=seeder)
                seeded.made.append(slug)
            # The memories, with the sessions that were delivered between them.
            memories, deliveries = seed_history(agent, token, people[DEMO_USER])
            if slug in seeded.made:
                tell_edits(agent, raw, people)
            seeded.memories += memories
            seeded.deliveries += deliveries
            seeded.cases += seed_cases(agent, seeder)
        seeded.versions = seed_kv(team)
        seeded.revisions = revisions.count() - revisions_before
        seeded.proposals = proposals.count() - proposals_before
        self.stdout.write(
            f"Demo team '{team.slug}': {seeded.words()}.\n"
            f"Log in at {login_url} as "
            f"{DEMO_USER} / {DEMO_PASSWORD}"
            + ("" if created else " (unless you changed that password)")
            + f"\nOr as the team's second reviewer, {SECOND_PERSON} / {SECOND_PASSWORD}"
            + ("" if second_login else " (unless you changed that password)")
            + f": {DEMO_USER} and {SECOND_PERSON} each publish the changes of protected"
            " agents the other proposes."
        )


def second_person(team: Team) -> tuple[AbstractUser, bool]:
    """The demo's second person, a reviewer of ``team`` who may change declarations in
    the admin, and whether this run made them a login. An older demo kept them as a
    name in the history with no password: they become a login once. A password or
    rights a person gave them since are left alone."""
    User = get_user_model()
    second, _ = User.objects.get_or_create(username=SECOND_PERSON)
    Membership.objects.get_or_create(team=team, user=second, defaults={"role": Role.REVIEWER})
    # A new user's password is empty, which Django counts as usable but nobody logs in with.
    if second.password and second.has_usable_password():
        return second, False
    second.set_password(SECOND_PASSWORD)
    second.is_staff = True
    second.save()
    granted = Permission.objects.filter(
        content_type__app_label="lens", codename__in=EDITOR_PERMISSIONS
    )
    second.user_permissions.add(*granted)
    return second, True


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
