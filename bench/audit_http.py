"""What appending the audit event costs a write, over HTTP under the production server
(SPEC §15's target: at most 10% of ``memory_save`` and of a key/value put, p50).

One scratch database is seeded (``bench.http_seed``); the production server runs on it
twice at once — as deployed, and with the appends made no-ops (``bench.unaudited``) —
and each write alternates between the two round by round, so both see the same machine
noise. SQLite, then PostgreSQL when it answers. Run: ``python -m bench.audit_http``.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.http import (
    PUT_PAYLOAD,
    free_port,
    postgres_answers,
    running,
    scratch_database,
    seed,
    server_env,
)
from bench.http_load import Call, Samples, load

ROUNDS = int(os.environ.get("BENCH_AUDIT_ROUNDS", "8"))
PER_ROUND = 150  # requests per round and server, one keep-alive client


@contextmanager
def server(env: dict[str, str], scratch: Path, audited: bool) -> Iterator[int]:
    port = free_port()
    target = "lens.serving.served:application" if audited else "bench.unaudited:application"
    command = [
        sys.executable,
        "-c",
        f"import sys; from lens.serving.server import production; production({target!r}).serve()",
    ]
    with running(command, port, {**env, "PORT": str(port), "WEB_CONCURRENCY": "1"}, scratch):
        yield port


def writes(info: dict[str, str], tag: str) -> dict[str, Call]:
    bearer = {"Authorization": f"Bearer {info['token']}", "Content-Type": "application/json"}
    put = json.dumps({"payload": PUT_PAYLOAD}).encode()

    def memory(n: int) -> bytes:
        content = f"The user mentioned fact {tag}-{n} worth keeping."
        return json.dumps({"kind": "profile", "content": content}).encode()

    return {
        "key/value put": Call(
            "PUT", f"/api/kv/bench.audit.{tag}", bearer, lambda _n: put, (200, 201)
        ),
        "memory_save": Call(
            "POST", f"/api/agents/{info['saver']}/memories", bearer, memory, (201,)
        ),
    }


def run(kind: str, scratch: Path) -> list[str]:
    title = "SQLite" if kind == "sqlite" else "PostgreSQL"
    lines = []
    with scratch_database(kind, scratch) as url:
        env = server_env(url, scratch)
        info = seed(env)
        with server(env, scratch, True) as audited, server(env, scratch, False) as plain:
            for name in ("key/value put", "memory_save"):
                samples = {True: Samples(), False: Samples()}
                for round_ in range(ROUNDS):
                    for on, port in ((True, audited), (False, plain)):
                        call = writes(info, f"{'a' if on else 'p'}{round_}")[name]
                        samples[on].add(load(port, call, 1, PER_ROUND))
                with_, without = samples[True].p50, samples[False].p50
                ratio = with_ / without
                verdict = "met" if ratio <= 1.10 else "MISSED"
                line = (
                    f"{title}: {name} p50 {with_:.2f} ms with the audit event, "
                    f"{without:.2f} ms without: {ratio:.3f}× (goal ≤ 1.10×, {verdict})"
                )
                print(line, flush=True)
                lines.append(line)
    return lines


def main() -> int:
    scratch = Path(tempfile.mkdtemp(prefix="lens-bench-audit-"))
    kinds = ["sqlite"] + (["postgresql"] if postgres_answers() else [])
    print("Audit log: the cost of appending an event to a write, over HTTP")
    for kind in kinds:
        run(kind, scratch)
    return 0


if __name__ == "__main__":
    sys.exit(main())
