"""Prepare a database for the HTTP benchmark (``bench.http``): run in its own process
with ``DATABASE_URL`` pointing at the scratch database the server will use.

Migrates, then creates a team with a reviewer who can sign in, an API token, the
40-section agent with 1,000 memories (the lens target), a small agent for saving
memories, and a key to read. Prints what the client needs as one JSON line.
"""

from __future__ import annotations

import json
import os
import sys

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lens.settings")

import django  # noqa: E402

django.setup()

from django.contrib.auth.models import User  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

from bench.common import analyze  # noqa: E402
from bench.data import big_memory_config, saver_config  # noqa: E402
from bench.lens_bench import save_planned  # noqa: E402
from kvstore import store  # noqa: E402
from lens.actors import Actor  # noqa: E402
from lens.models import ApiToken, Membership, Role, Team  # noqa: E402
from memory.configuring import store_agent  # noqa: E402

TEAM = "bench"
BIG = "big"
SAVER = "saver"
READ_KEY = "must.bench.read"
# A typical "must" note: a few hundred characters.
READ_PAYLOAD = "Always answer in the user's language. " * 8
PASSWORD = "bench-http-password-not-secret"


def durability() -> str:
    """How the database makes an acknowledged write durable, as configured."""
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("PRAGMA synchronous")
            mode = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}[cursor.fetchone()[0]]
            cursor.execute("PRAGMA journal_mode")
            return f"SQLite journal_mode={cursor.fetchone()[0]}, synchronous={mode}"
        cursor.execute("SHOW fsync")
        fsync = cursor.fetchone()[0]
        cursor.execute("SHOW synchronous_commit")
        return f"PostgreSQL fsync={fsync}, synchronous_commit={cursor.fetchone()[0]}"


def seed() -> dict[str, str]:
    call_command("migrate", verbosity=0)
    team = Team.objects.create(slug=TEAM, name="Bench")
    user = User.objects.create_user("bench", password=PASSWORD)
    Membership.objects.create(team=team, user=user, role=Role.REVIEWER)
    _token, raw = ApiToken.objects.issue(team, name="bench")
    big, _ = store_agent(team, BIG, big_memory_config())
    save_planned(big, Actor.for_user(user))
    saver = saver_config()
    store_agent(team, SAVER, saver)
    store.write(team, READ_KEY, READ_PAYLOAD)
    analyze()
    return {
        "durability": durability(),
        "read_payload": READ_PAYLOAD,
        "token": raw,
        "username": user.username,
        "password": PASSWORD,
        "team": TEAM,
        "big": BIG,
        "saver": SAVER,
        "read_key": READ_KEY,
    }


if __name__ == "__main__":
    print(json.dumps(seed()))
    sys.exit(0)
