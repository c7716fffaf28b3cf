"""What tracing costs (SPEC §16): the composition endpoint under ``make serve`` with
OpenTelemetry off and on, in one run (``make bench`` and ``make bench-http`` print it;
``python -m bench.tracing_http`` alone).

For each database (SQLite, then PostgreSQL when it answers at ``BENCH_PG_URL``), one
seeded scratch database (``bench.http_seed``) and two ``make serve`` beside it: one
without ``OTEL_EXPORTER_OTLP_ENDPOINT``, one exporting every span (the default sampler)
over OTLP/HTTP to a local receiver that reads each export and throws it away. Rounds
alternate between the two servers, so both see the same machine noise. The figure is
the ratio of the p50s, tracing on over off; the target is at most 1.15×. A key/value
read is measured the same way, for the cost of a request span on a cheap request.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from bench.http import calls, each_database, scratch_database, seed, serve, server_env, verdict
from bench.http_load import Call, Samples, load

ROUNDS = int(os.environ.get("BENCH_TRACING_ROUNDS", "8"))
TARGET = 1.15
# Requests per round and client: the composition takes milliseconds, a read much less.
PER_ROUND = {"composition": 25, "key/value get": 200}


class Exports:
    """What the discarding receiver was sent: how many exports, how many bytes."""

    def __init__(self) -> None:
        self.count = 0
        self.bytes = 0
        self.lock = threading.Lock()


@contextmanager
def discarding_receiver() -> Iterator[tuple[str, Exports]]:
    """An OTLP/HTTP endpoint on a free loopback port that answers every export 200 and
    keeps nothing but the count."""
    exports = Exports()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            size = int(self.headers.get("Content-Length", "0"))
            self.rfile.read(size)
            with exports.lock:
                exports.count += 1
                exports.bytes += size
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", exports
    finally:
        server.shutdown()
        server.server_close()


def measure(call: Call, per_round: int, off: int, on: int) -> tuple[Samples, Samples]:
    """One client, ``ROUNDS`` rounds on each server, alternating."""
    without, with_ = Samples(), Samples()
    load(off, call, 1, 3)  # warm both (templates, caches, the first export)
    load(on, call, 1, 3)
    for round_ in range(ROUNDS):
        # Which goes first alternates too: a round's second half is never always "on".
        for port, samples in [(off, without), (on, with_)][:: 1 if round_ % 2 == 0 else -1]:
            samples.add(load(port, call, 1, per_round))
    return without, with_


def run_backend(kind: str, scratch: Path, summary: list[str]) -> None:
    title = "SQLite" if kind == "sqlite" else "PostgreSQL"
    with scratch_database(kind, scratch) as url, discarding_receiver() as (endpoint, exports):
        env = server_env(url, scratch)
        for name in [name for name in env if name.startswith("OTEL_")]:
            del env[name]  # off means off, whatever this shell has
        info = seed(env)
        traced = {**env, "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint}
        with ExitStack() as stack:
            off = stack.enter_context(serve(env, scratch))
            on = stack.enter_context(serve(traced, scratch))
            pairs = {pair.name: pair.ours for pair in calls(info)}
            measured = {
                "composition": pairs["composition endpoint (40 sections, 1,000 memories)"],
                "key/value get": pairs["key/value get"],
            }
            print(f"\n{title}")
            for name, call in measured.items():
                without, with_ = measure(call, PER_ROUND[name], off, on)
                ratio = with_.p50 / without.p50
                print(
                    f"  {name:<14} off p50 {without.p50:7.2f} ms   on p50 {with_.p50:7.2f} ms   "
                    f"on/off {ratio:.3f}×   (+{(with_.p50 - without.p50) * 1000:.0f} µs)"
                )
                if name == "composition":
                    summary.append(
                        f"{title}: composition endpoint p50, tracing on/off: {ratio:.3f}× "
                        f"{verdict(ratio, TARGET)}"
                    )
        print(f"  the receiver took {exports.count} exports, {exports.bytes / 1024:.0f} KiB")
        if exports.count == 0:
            raise RuntimeError("tracing was on, yet nothing was exported")


def main() -> int:
    heading = (
        "Tracing overhead — make serve without and with OTEL_EXPORTER_OTLP_ENDPOINT, one client"
    )
    return each_database("lens-bench-tracing-", heading, run_backend)


if __name__ == "__main__":
    sys.exit(main())
