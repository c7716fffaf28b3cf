"""Key/value targets: latest read, history paging, prefix listing, sustained writes."""

from __future__ import annotations

import sqlite3
import time
import uuid
from collections.abc import Callable

from django.db import connection
from django.utils import timezone

from bench.common import analyze
from kvstore import store
from kvstore.models import Key, Version
from lens.models import Team

_RUN = uuid.uuid4().hex[:8]


def _bulk_keys(team: Team, count: int) -> None:
    now = timezone.now()
    batch = 5000
    for offset in range(0, count, batch):
        keys = [
            Key(
                team=team,
                key=f"ns{i % 100:02d}.topic{i // 100:04d}.item",
                latest_version=1,
                latest_written_at=now,
                latest_runes=40,
                created_at=now,
            )
            for i in range(offset, min(offset + batch, count))
        ]
        Key.objects.bulk_create(keys)
        Version.objects.bulk_create(
            Version(
                key=k, version=1, payload="x" * 40, runes=40, first_line="x" * 40, written_at=now
            )
            for k in keys
        )


def _versions(team: Team, key: str, count: int) -> None:
    now = timezone.now()
    row = Key.objects.create(
        team=team,
        key=key,
        latest_version=count,
        latest_written_at=now,
        latest_runes=60,
        created_at=now,
    )
    Version.objects.bulk_create(
        Version(
            key=row,
            version=v,
            payload=f"version {v}\n" + "y" * 50,
            runes=60,
            first_line=f"version {v}",
            written_at=now,
        )
        for v in range(1, count + 1)
    )


def run(median_ms: Callable[..., float], report: Callable[..., None]) -> None:
    team = Team.objects.create(slug=f"bench-kv-{_RUN}", name="Bench kv")
    print("\nKey/value store")
    store.write(team, "root", "entry point\n" * 20)
    read_ms = median_ms(lambda: store.read(team, "root"), 500)
    report("read of the latest version through the service", read_ms * 1000, 1000, unit="µs")
    if connection.vendor == "sqlite":
        raw = sqlite3.connect(connection.settings_dict["NAME"])
        sql = (
            "SELECT v.version, v.payload, v.written_at, v.runes FROM kvstore_version v "
            "JOIN kvstore_key k ON k.id = v.key_id WHERE k.team_id = ? AND k.key = ? "
            "ORDER BY v.version DESC LIMIT 1"
        )
        raw_ms = median_ms(lambda: raw.execute(sql, (team.pk, "root")).fetchone(), 500)
        raw.close()
        report("the same lookup in raw sqlite3", raw_ms * 1000, unit="µs")
        print(f"  ratio service / raw sqlite3: {read_ms / raw_ms:.1f}x")

    _versions(team, "hist.small", 10)
    _versions(team, "hist.large", 10_000)
    analyze()
    small = median_ms(lambda: store.history(team, "hist.small", 50, 0), 100)
    large = median_ms(lambda: store.history(team, "hist.large", 50, 0), 100)
    report("first history page, key with 10 versions", small)
    report("first history page, key with 10,000 versions", large)
    print(f"  ratio 10,000 / 10: {large / small:.2f} (target: <= 2)")

    started = time.perf_counter()
    _bulk_keys(team, 100_000)
    analyze()
    print(f"  (loaded 100,000 keys in {time.perf_counter() - started:.1f} s)")

    def list_page() -> None:
        rows = store.keys_with_prefix(team, "ns42.")
        rows.count()
        list(rows.values_list("key", "latest_version", "latest_written_at", "latest_runes")[:50])

    report(
        "list a prefix among 100,000 keys, page of 50 (with total)", median_ms(list_page, 50), 20
    )

    writes = 300
    started = time.perf_counter()
    for n in range(writes):
        store.write(team, f"load.key{n % 10}", f"payload {n}\n")
    per_second = writes / (time.perf_counter() - started)
    print(f"  sustained writes through the service: {per_second:.0f} per second (one writer)")


def cleanup() -> None:
    Team.objects.filter(slug=f"bench-kv-{_RUN}").delete()
