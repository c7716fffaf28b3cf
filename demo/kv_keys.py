"""Demo key/value entries: a root, eager must.* keys and on-demand ref.* keys."""

from __future__ import annotations

from kvstore import store
from kvstore.models import Key
from lens.models import Team

ROOT_V1 = """# Demo team — agent root
Read must.* at the start of every session; fetch ref.* only when a task needs it.
"""

ROOT_V2 = (
    ROOT_V1
    + """
Owners: platform team (#platform). Ask before adding a new must.* key: each one costs
every session tokens.
"""
)

DEMO_KV: dict[str, list[str]] = {
    "root": [ROOT_V1, ROOT_V2],
    "must.craft.traps": [
        "Never trust a test that passed on the first run after a rename.\n",
        "Never trust a test that passed on the first run after a rename.\n"
        "Migrations that add a NOT NULL column need a default or a backfill step.\n",
        "Never trust a test that passed on the first run after a rename.\n"
        "Migrations that add a NOT NULL column need a default or a backfill step.\n"
        "Timezones: store UTC, convert at the edge, never compare naive datetimes.\n",
    ],
    "must.people.doug": [
        "Doug prefers short answers with the command first.\n",
        "Doug prefers short answers with the command first.\nHe is in Lisbon (UTC+0/+1).\n",
    ],
    "must.safety": ["Never paste secrets into chat. Rotate any key that was shown.\n"],
    "ref.runbooks.payments": [
        "Payments runbook\n1. Check the status page.\n2. Page #payments-oncall.\n",
        "Payments runbook\n1. Check the status page.\n2. Page #payments-oncall.\n"
        "3. If payouts are stuck, pause the settlement job first.\n",
    ],
    "ref.adr.0009": [
        "ADR 0009: the model saves content; a developer-declared spec decides where it lands.\n"
    ],
}


def seed_kv(team: Team) -> int:
    """Write the demo keys, once: keys that already exist are left alone."""
    existing = set(Key.objects.filter(team=team, key__in=DEMO_KV).values_list("key", flat=True))
    written = 0
    for key, versions in DEMO_KV.items():
        if key in existing:
            continue
        for payload in versions:
            store.write(team, key, payload)
            written += 1
    return written
