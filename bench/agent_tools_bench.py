"""What agents call (SPEC §7.1, §5.7): the bootstrap read and the routing preview."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from django.db import connection
from django.test.utils import CaptureQueriesContext

from bench.common import analyze
from bench.data import big_config
from bench.delivery_bench import _big_agent
from kvstore import store
from kvstore.bootstrap import bootstrap
from lens.models import Team
from memory.configuring import store_agent
from memory.core.records import MemoryInput
from memory.preview import preview_save

_RUN = uuid.uuid4().hex[:8]
MUST_KEYS = 30
MUST_RUNES = 1_000  # 30 keys of 1,000 code points: a 30,000-code-point must tier
REF_KEYS = 1_000


def run(median_ms: Callable[..., float], report: Callable[..., None]) -> None:
    team = Team.objects.create(slug=f"bench-tools-{_RUN}", name="Bench tools")
    store.write(team, "root", "Start here: read must.*, then ref.* on demand.\n" * 4)
    for i in range(MUST_KEYS):
        store.write(team, f"must.rule{i:02d}", f"Rule {i}: " + "m" * (MUST_RUNES - 9 - len(str(i))))
    for i in range(REF_KEYS):
        store.write(team, f"ref.doc{i:04d}", f"REF-PAYLOAD {i}\n" + "r" * 2_000)
    analyze()
    print(
        f"\nBootstrap: a {MUST_KEYS * MUST_RUNES:,}-code-point must tier and {REF_KEYS:,} ref keys"
    )
    report("bootstrap read in-process (median)", median_ms(lambda: bootstrap(team), 30), 20)
    with CaptureQueriesContext(connection) as ctx:
        found = bootstrap(team)
    payload_reads = [q["sql"] for q in ctx.captured_queries if "payload" in q["sql"]]
    ref_payloads = sum("ref.doc" in sql for sql in payload_reads)
    print(
        f"  {len(found.must)} must keys, {len(found.ref)} ref pointers, {found.used:,} code points;"
        f" {len(ctx.captured_queries)} queries, {len(payload_reads)} read payloads,"
        f" {ref_payloads} of them name a ref key"
    )
    assert ref_payloads == 0

    print("\nRouting preview, in-process")
    plain = store_agent(
        team, "plain", big_config().model_copy(update={"routing_spec": "user-background"})
    )[0]
    big = _big_agent(team)
    analyze()
    memory = MemoryInput(kind="profile", content="The user's name is Ada.", label="name")
    report(
        "preview, 40 sections, no memories (median)",
        median_ms(lambda: preview_save(plain, memory), 50),
        5,
    )
    report(
        "preview, 40 sections and 1,000 memories (median)",
        median_ms(lambda: preview_save(big, memory), 20),
    )


def cleanup() -> None:
    Team.objects.filter(slug=f"bench-tools-{_RUN}").delete()
