"""``make bench-engines``: the task engines the webhook sender could run on, measured
side by side in one run (``python -m bench.task_engines``).

A is django-tasks with its database backend (django-tasks-db, workers are its
``db_worker``), on SQLite (a temporary file) and on PostgreSQL; B is procrastinate
(PostgreSQL only, its ``PsycopgConnector``, workers woken by LISTEN/NOTIFY). Each runs
in processes of its own (``bench/task_engine_django_tasks.py``,
``bench/task_engine_procrastinate.py``) on a database of its own, created here and
dropped afterwards (PostgreSQL at ``BENCH_PG_URL``; skipped when it does not answer).
Every task notes when it starts and ends in a shared log (``bench/task_engine_work.py``),
which is how runs, duplicates and latencies are seen whatever the engine.

For each: what enqueueing adds to a transaction that inserts one small row (p50 of
2,000 each, in alternation); one worker draining 1,000 tasks that do nothing, then 1,000
that POST to a receiver on loopback (the log's first start to last end, and the commit
to the last end); the commit-to-start latency with an idle worker (A at ``db_worker``'s
default poll interval of 1 s and at 0.1 s); two workers draining 1,000 tasks (how many
ran twice); and a worker killed with SIGKILL mid-task (what the task's row says, whether
a new worker runs it again, and what recovers it).
"""

from __future__ import annotations

import os
import random
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.metadata import version
from pathlib import Path
from typing import Any

from bench.http import PG_URL, postgres_answers
from bench.task_engine_client import Client
from bench.task_engine_work import LOG_ENV, Event, TaskLog

ROOT = Path(__file__).resolve().parent.parent
TASKS = int(os.environ.get("BENCH_ENGINE_TASKS", "1000"))
ENQUEUE_RUNS = int(os.environ.get("BENCH_ENGINE_ENQUEUE_RUNS", "2000"))
LATENCY_SAMPLES = int(os.environ.get("BENCH_ENGINE_LATENCY_SAMPLES", "15"))
# db_worker's default poll interval (its --interval), and a tenth of it.
A_INTERVALS = (1.0, 0.1)
# The killed task's length; also how long A's recovery waits before calling a task
# RUNNING for good (no task may take longer).
HOLD_SECONDS = 3.0
# procrastinate's heartbeat and stalled-worker timeout, shortened from its defaults
# (10 s and 30 s) so the kill test takes seconds.
B_HEARTBEAT, B_STALLED = 1.0, 3.0
# How long a new worker is watched, after it is up, for running the killed task again.
WATCH_SECONDS = 3.0
FINISHED = {"SUCCESSFUL", "succeeded"}


# --- the receiver the POST tasks send to ----------------------------------------------


class Receiver(ThreadingHTTPServer):
    daemon_threads = True
    received = 0
    lock = threading.Lock()


class ReceiverHandler(BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with self.server.lock:
            self.server.received += 1
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        return None


@contextmanager
def receiver() -> Iterator[Receiver]:
    """An ``http.server`` on a free loopback port that answers every POST with 200."""
    server = Receiver(("127.0.0.1", 0), ReceiverHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


# --- databases ------------------------------------------------------------------------


@contextmanager
def database(kind: str, name: str, scratch: Path) -> Iterator[str]:
    """A SQLite file under ``scratch``, or a PostgreSQL database created for the run."""
    if kind == "sqlite":
        yield f"sqlite:///{scratch / f'{name}.sqlite3'}"
        return
    import psycopg

    with psycopg.connect(PG_URL, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield urllib.parse.urlparse(PG_URL)._replace(path=f"/{name}").geturl()
    finally:
        with psycopg.connect(PG_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# --- one engine on one database ---------------------------------------------------------


@dataclass
class Figures:
    tx_us: dict[str, float] = field(default_factory=dict)  # alone / task / row
    call_us: dict[str, float] = field(default_factory=dict)  # task / row
    latency_ms: dict[str, float] = field(default_factory=dict)
    drains: dict[str, tuple[float, float]] = field(default_factory=dict)  # rate/s, total s
    pair_seconds: float = 0.0
    pair_runs: int = 0
    pair_twice: int = 0
    pair_missing: int = 0
    pair_split: list[int] = field(default_factory=list)
    killed: list[str] = field(default_factory=list)


class Engine:
    """One engine on one database: its client process, its workers, its task numbers."""

    def __init__(self, name: str, db_label: str, url: str, scratch: Path) -> None:
        self.name = name
        self.db_label = db_label
        self.url = url
        self.scratch = scratch
        self.next_n = 1
        self.logs = 0
        self.started = 0
        self.workers: list[subprocess.Popen[bytes]] = []
        self.client = Client([sys.executable, "-c", self._entry(), "client"], self.env(), ROOT)

    @property
    def django_tasks(self) -> bool:
        return self.name == "django-tasks-db"

    def _entry(self) -> str:
        module = "task_engine_django_tasks" if self.django_tasks else "task_engine_procrastinate"
        return f"from bench.{module} import main; main()"

    def env(self, log: Path | None = None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
        env["DATABASE_URL"] = self.url
        env[LOG_ENV] = str(log or self.scratch / "unused.log")
        if self.django_tasks:
            env["DJANGO_SETTINGS_MODULE"] = "bench.task_engine_settings"
        return env

    def new_log(self) -> TaskLog:
        self.logs += 1
        return TaskLog(self.scratch / f"{self.name}-{self.db_label}-{self.logs}.log")

    def numbers(self, count: int) -> range:
        first = self.next_n
        self.next_n += count
        return range(first, first + count)

    def enqueue(self, kind: str, count: int = 1, arg: str = "") -> tuple[range, float]:
        numbers = self.numbers(count)
        answer = self.client.call("enqueue", kind=kind, first=numbers.start, count=count, arg=arg)
        return numbers, float(answer["committed"])

    def start_worker(
        self, log: TaskLog, interval: float = A_INTERVALS[0]
    ) -> subprocess.Popen[bytes]:
        if self.django_tasks:
            command = [
                sys.executable,
                "-m",
                "django",
                "db_worker",
                "--no-reload",
                "--no-startup-delay",
                "--interval",
                str(interval),
                "-v",
                "0",
            ]
        else:
            command = [sys.executable, "-c", self._entry(), "worker", str(B_HEARTBEAT)]
            command.append(str(B_STALLED))
        self.started += 1
        output = (self.scratch / f"{self.name}-{self.db_label}-worker-{self.started}.out").open(
            "wb"
        )
        process = subprocess.Popen(
            command, cwd=ROOT, env=self.env(log.path), stdout=output, stderr=subprocess.STDOUT
        )
        output.close()
        self.workers.append(process)
        return process

    def stop_workers(self) -> None:
        for process in self.workers:
            if process.poll() is None:
                process.terminate()
        for process in self.workers:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.workers = []

    def wait(self, log: TaskLog, done: Callable[[list[Event]], bool], what: str) -> list[Event]:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            events = log.read()
            if done(events):
                return events
            for process in self.workers:
                if process.poll() not in (None, 0, -signal.SIGKILL, -signal.SIGTERM):
                    raise RuntimeError(f"{self.name} worker exited: {process.returncode}")
            time.sleep(0.01)
        raise RuntimeError(f"{self.name} on {self.db_label}: {what} did not happen in 180 s")

    def warm(self, log: TaskLog, workers: int = 1) -> None:
        """Wait until the workers have run a first task each (imports done,
        connections open): ``workers`` tasks that hold 0.5 s, so one worker cannot
        take them all while another is still starting."""
        kind, arg = ("noop", "") if workers == 1 else ("hold", "0.5")
        numbers, _ = self.enqueue(kind, workers, arg)
        self.wait(log, have_ended(numbers, workers), "warming up")

    def settle(self) -> dict[str, int]:
        """The task rows once every task has finished (a task notes its end just before
        its engine marks it finished)."""
        deadline = time.monotonic() + 30
        while True:
            counts: dict[str, int] = self.client.call("counts")
            if set(counts) <= FINISHED or time.monotonic() > deadline:
                return counts
            time.sleep(0.02)

    def close(self) -> None:
        self.stop_workers()
        self.client.close()


def have_started(numbers: range, count: int) -> Callable[[list[Event]], bool]:
    return lambda events: started(events, numbers) >= count


def have_ended(numbers: range, count: int) -> Callable[[list[Event]], bool]:
    return lambda events: ended(events, numbers) >= count


def started(events: list[Event], numbers: range) -> int:
    return sum(1 for e in events if e.kind == "start" and e.n in numbers)


def ended(events: list[Event], numbers: range) -> int:
    return sum(1 for e in events if e.kind == "end" and e.n in numbers)


def at(events: list[Event], kind: str, n: int) -> list[float]:
    return [e.at for e in events if e.kind == kind and e.n == n]


# --- the measurements -------------------------------------------------------------------


def measure_enqueue(engine: Engine, figures: Figures) -> None:
    answer = engine.client.call("enqueue_cost", runs=ENQUEUE_RUNS, first=1_000_000_000)
    figures.tx_us = answer["tx"]
    figures.call_us = answer["call"]
    engine.client.call("clear")  # nobody is to run the tasks this left in the queue


def measure_latency(engine: Engine, figures: Figures, interval: float | None) -> None:
    log = engine.new_log()
    engine.start_worker(log, interval or A_INTERVALS[0])
    engine.warm(log)
    samples = []
    for _ in range(LATENCY_SAMPLES):
        # A random moment of the worker's idle poll cycle.
        time.sleep(0.05 + random.uniform(0, interval or 0))
        numbers, committed = engine.enqueue("noop")
        events = engine.wait(log, have_started(numbers, 1), "a start")
        samples.append((at(events, "start", numbers.start)[0] - committed) * 1000)
    engine.stop_workers()
    label = f"poll {interval:g} s" if interval is not None else "LISTEN/NOTIFY"
    figures.latency_ms[label] = statistics.median(samples)


def measure_drain(engine: Engine, figures: Figures, kind: str, url: str) -> None:
    log = engine.new_log()
    engine.start_worker(log)
    engine.warm(log)
    numbers, committed = engine.enqueue(kind, TASKS, url if kind == "post" else "")
    events = engine.wait(log, have_ended(numbers, TASKS), f"{TASKS} {kind} tasks")
    engine.stop_workers()
    first = min(e.at for e in events if e.kind == "start" and e.n in numbers)
    last = max(e.at for e in events if e.kind == "end" and e.n in numbers)
    figures.drains[kind] = (TASKS / (last - first), last - committed)


def measure_pair(engine: Engine, figures: Figures) -> None:
    log = engine.new_log()
    engine.start_worker(log)
    engine.start_worker(log)
    engine.warm(log, workers=2)
    numbers, committed = engine.enqueue("noop", TASKS)
    events = engine.wait(log, have_ended(numbers, TASKS), f"{TASKS} tasks, 2 workers")
    time.sleep(0.5)  # a task run twice would start after its first run's end
    events = log.read()
    engine.stop_workers()
    runs = Counter(e.n for e in events if e.kind == "start" and e.n in numbers)
    figures.pair_runs = sum(runs.values())
    figures.pair_twice = sum(count - 1 for count in runs.values() if count > 1)
    figures.pair_missing = TASKS - len(runs)
    by_worker = Counter(e.pid for e in events if e.kind == "start" and e.n in numbers)
    figures.pair_split = sorted(by_worker.values(), reverse=True)
    figures.pair_seconds = max(e.at for e in events if e.kind == "end") - committed


def describe(row: dict[str, Any], engine: Engine) -> str:
    if engine.django_tasks:
        started, finished = (
            "set" if row[key] else "empty" for key in ("started_at", "finished_at")
        )
        return (
            f"{row['status']}, started_at {started}, finished_at {finished}, "
            f"worker_ids ×{len(row['worker_ids'])}"
        )
    workers = ", ".join(f"#{w} heartbeat {age:g} s old" for w, age in row["workers"].items())
    return f"{row['status']}, worker_id {row['worker_id']} ({workers or 'no workers'})"


def measure_kill(engine: Engine, figures: Figures) -> None:
    notes = figures.killed
    log = engine.new_log()
    first = engine.start_worker(log)
    engine.warm(log)
    numbers, _ = engine.enqueue("hold", 1, str(HOLD_SECONDS))
    n = numbers.start
    engine.wait(log, have_started(numbers, 1), "the held task's start")
    first.send_signal(signal.SIGKILL)
    first.wait()
    killed = time.monotonic()
    notes.append(f"after kill -9: {describe(engine.client.call('row', n=n), engine)}")
    if not engine.django_tasks:
        # Only a heartbeat older than the stalled timeout lets a new worker prune the
        # dead one (it does so once, when it starts).
        time.sleep(B_STALLED + 0.5)
    engine.start_worker(log)
    engine.warm(log)
    time.sleep(WATCH_SECONDS)
    events = log.read()
    notes.append(
        f"new worker up, {time.monotonic() - killed:.0f} s after the kill: "
        f"{describe(engine.client.call('row', n=n), engine)}; runs again: "
        f"{len(at(events, 'start', n)) - 1}"
    )
    recovering = time.time()
    requeued = engine.client.call("recover", older_than=HOLD_SECONDS)["requeued"]
    events = engine.wait(log, have_started(numbers, 2), "the re-run")
    picked = at(events, "start", n)[1] - recovering
    engine.wait(log, have_ended(numbers, 1), "the re-run's end")
    time.sleep(0.2)
    row = engine.client.call("row", n=n)
    notes.append(
        f"recovered: {requeued} requeued, started again {picked:.2f} s later, then {row['status']}"
    )
    engine.stop_workers()


def measure(engine: Engine, post_url: str) -> Figures:
    figures = Figures()
    engine.client.call("setup")
    print(f"\n{engine.name} · {engine.db_label}", flush=True)
    measure_enqueue(engine, figures)
    tx, call = figures.tx_us, figures.call_us
    print(
        f"  transaction p50: {tx['alone']:.0f} µs with 1 row; {tx['task']:.0f} µs with a task "
        f"(the enqueue {call['task']:.0f} µs); {tx['row']:.0f} µs with a 2nd row "
        f"(the insert {call['row']:.0f} µs)",
        flush=True,
    )
    for interval in A_INTERVALS if engine.django_tasks else (None,):
        measure_latency(engine, figures, interval)
    latencies = ", ".join(f"{ms:.0f} ms ({label})" for label, ms in figures.latency_ms.items())
    print(f"  commit → start, idle worker, p50: {latencies}", flush=True)
    for kind in ("noop", "post"):
        measure_drain(engine, figures, kind, post_url)
        rate, total = figures.drains[kind]
        print(f"  {TASKS:,} {kind}, 1 worker: {rate:.0f} tasks/s, {total:.2f} s", flush=True)
    measure_pair(engine, figures)
    counts = engine.settle()
    print(
        f"  {TASKS:,} noop, 2 workers: {figures.pair_runs} runs, {figures.pair_twice} twice; "
        f"task rows by status {counts}",
        flush=True,
    )
    measure_kill(engine, figures)
    for note in figures.killed:
        print(f"  {note}", flush=True)
    return figures


# --- the table --------------------------------------------------------------------------


def table(results: list[tuple[str, Figures]]) -> None:
    figures = [f for _, f in results]
    rows: list[tuple[str, list[str]]] = []

    def ratio(f: Figures, variant: str) -> str:
        return f"{f.tx_us[variant]:.0f} µs ({f.tx_us[variant] / f.tx_us['alone']:.2f}×)"

    rows.append(
        ("transaction inserting 1 small row, p50", [f"{f.tx_us['alone']:.0f} µs" for f in figures])
    )
    rows.append(("  + enqueue 1 task in it, p50", [ratio(f, "task") for f in figures]))
    rows.append(
        ("    the enqueue call alone, p50", [f"{f.call_us['task']:.0f} µs" for f in figures])
    )
    rows.append(("  + 1 more small row instead, p50", [ratio(f, "row") for f in figures]))
    rows.append(("    the insert alone, p50", [f"{f.call_us['row']:.0f} µs" for f in figures]))
    for kind, name in (("noop", "no-op"), ("post", "HTTP POST")):
        rows.append(
            (
                f"1 worker, {TASKS:,} {name}: first start → last end",
                [f"{f.drains[kind][0]:.0f} tasks/s" for f in figures],
            )
        )
        rows.append(
            (
                f"1 worker, {TASKS:,} {name}: commit → last end",
                [f"{f.drains[kind][1]:.2f} s" for f in figures],
            )
        )
    for label in sorted({label for f in figures for label in f.latency_ms}, reverse=True):
        cells = [f"{f.latency_ms[label]:.0f} ms" if label in f.latency_ms else "—" for f in figures]
        rows.append((f"commit → start, idle worker, p50, {label}", cells))
    rows.append(
        (
            f"2 workers, {TASKS:,} no-op: commit → last end",
            [f"{f.pair_seconds:.2f} s" for f in figures],
        )
    )
    rows.append(
        (
            "2 workers: runs / ran twice / never ran",
            [f"{f.pair_runs} / {f.pair_twice} / {f.pair_missing}" for f in figures],
        )
    )
    rows.append(
        ("2 workers: tasks each ran", [" + ".join(map(str, f.pair_split)) for f in figures])
    )

    print(f"\nTask engines, one run on {os.cpu_count()} cores ({time.strftime('%Y-%m-%d %H:%M')})")
    print(
        f"  A = django-tasks {version('django-tasks')} + django-tasks-db {version('django-tasks-db')} (db_worker)"
    )
    print(f"  B = procrastinate {version('procrastinate')} (PsycopgConnector, LISTEN/NOTIFY)\n")
    width = max(len(name) for name, _ in rows) + 2
    print(" " * width + "".join(f"{label:>22}" for label, _ in results))
    for name, cells in rows:
        print(f"{name:<{width}}" + "".join(f"{cell:>22}" for cell in cells))
    for label, f in results:
        print(f"\nkill -9 mid-task, {label}:")
        for note in f.killed:
            print(f"  {note}")


def main() -> int:
    scratch = Path(tempfile.mkdtemp(prefix="lens-bench-engines-"))
    suffix = f"{os.getpid()}_{secrets.token_hex(2)}"
    runs = [("django-tasks-db", "sqlite", "SQLite")]
    if postgres_answers():
        runs += [
            ("django-tasks-db", "postgresql", "PostgreSQL"),
            ("procrastinate", "postgresql", "PostgreSQL"),
        ]
    else:
        print(f"PostgreSQL does not answer at {PG_URL}: only django-tasks-db on SQLite")
    results: list[tuple[str, Figures]] = []
    try:
        with receiver() as server:
            post_url = f"http://127.0.0.1:{server.server_address[1]}/hook"
            for name, kind, db_label in runs:
                letter = "a" if name == "django-tasks-db" else "b"
                with database(kind, f"lens_bench_tasks_{letter}_{suffix}", scratch) as url:
                    engine = Engine(name, db_label, url, scratch)
                    try:
                        before = server.received
                        figures = measure(engine, post_url)
                        if server.received - before != TASKS:
                            raise RuntimeError(f"{server.received - before} POSTs received")
                    finally:
                        engine.close()
                results.append((f"{letter.upper()} · {db_label}", figures))
        table(results)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
