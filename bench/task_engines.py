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

For each: what enqueueing adds to a transaction that inserts one small row, against a
second small row instead (p50 of 2,000 each, in rotation); the commit-to-start latency
with an idle worker (A at ``db_worker``'s default poll interval of 1 s and at 0.1 s); one
worker draining 1,000 tasks that do nothing, then 1,000 that POST to a receiver on
loopback, then two workers draining 1,000 (the log's first start to last end, the commit
to the last end, how many ran twice or never); and a worker killed with SIGKILL mid-task
(what the task's row says, whether a new worker runs it again, what recovers it).

The engines are measured one after another for each figure, so all see the same minutes
of a shared machine, and the drains twice, in another order each round, beside the
disk's pace at the time (the fsync every commit waits for).
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
from contextlib import ExitStack, contextmanager
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
ROUNDS = int(os.environ.get("BENCH_ENGINE_ROUNDS", "2"))
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
class Drain:
    rate: float  # tasks/s from the first start to the last end
    seconds: float  # from the commit that enqueued them to the last end
    runs: int = 0  # starts seen (a task run twice starts twice)
    twice: int = 0
    missing: int = 0
    unfinished: int = 0  # task rows not marked finished by the engine afterwards
    split: list[int] = field(default_factory=list)  # tasks each worker ran


@dataclass
class Figures:
    tx_us: dict[str, float] = field(default_factory=dict)  # alone / task / row
    call_us: dict[str, float] = field(default_factory=dict)  # task / row
    latency_ms: dict[str, float] = field(default_factory=dict)
    drains: dict[str, list[Drain]] = field(default_factory=dict)  # noop / post / pair
    killed: list[str] = field(default_factory=list)


class Engine:
    """One engine on one database: its client process, its workers, its task numbers."""

    def __init__(self, name: str, db_label: str, url: str, scratch: Path) -> None:
        self.name = name
        self.db_label = db_label
        self.label = f"{'A' if name == 'django-tasks-db' else 'B'} · {db_label}"
        self.figures = Figures()
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


def measure_enqueue(engine: Engine) -> None:
    answer = engine.client.call("enqueue_cost", runs=ENQUEUE_RUNS, first=1_000_000_000)
    figures = engine.figures
    figures.tx_us, figures.call_us = answer["tx"], answer["call"]
    engine.client.call("clear")  # nobody is to run the tasks this left in the queue
    tx, call = figures.tx_us, figures.call_us
    print(
        f"  {engine.label}: transaction p50 {tx['alone']:.0f} µs with 1 row; "
        f"{tx['task']:.0f} µs with a task (the enqueue {call['task']:.0f} µs); "
        f"{tx['row']:.0f} µs with a 2nd row (the insert {call['row']:.0f} µs)",
        flush=True,
    )


def measure_latency(engine: Engine, interval: float | None) -> None:
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
    engine.figures.latency_ms[label] = statistics.median(samples)
    print(f"  {engine.label}: commit → start p50 {statistics.median(samples):.0f} ms ({label})")


def measure_drain(engine: Engine, kind: str, url: str, workers: int = 1) -> None:
    """``TASKS`` tasks of ``kind`` enqueued in one transaction while ``workers`` workers
    wait; how fast they go, and how many ran twice or never."""
    log = engine.new_log()
    for _ in range(workers):
        engine.start_worker(log)
    engine.warm(log, workers)
    numbers, committed = engine.enqueue(kind, TASKS, url if kind == "post" else "")
    engine.wait(log, have_ended(numbers, TASKS), f"{TASKS} {kind} tasks, {workers} workers")
    time.sleep(0.5)  # a task run twice would start after its first run's end
    counts = engine.settle()
    events = [e for e in log.read() if e.n in numbers]
    engine.stop_workers()
    starts = [e for e in events if e.kind == "start"]
    first = min(e.at for e in starts)
    last = max(e.at for e in events if e.kind == "end")
    runs = Counter(e.n for e in starts)
    drain = Drain(
        rate=TASKS / (last - first),
        seconds=last - committed,
        runs=len(starts),
        twice=sum(count - 1 for count in runs.values() if count > 1),
        missing=TASKS - len(runs),
        unfinished=sum(count for status, count in counts.items() if status not in FINISHED),
        split=sorted(Counter(e.pid for e in starts).values(), reverse=True),
    )
    name = kind if workers == 1 else "pair"
    engine.figures.drains.setdefault(name, []).append(drain)
    print(
        f"  {engine.label}: {TASKS:,} {kind}, {workers} worker(s): {drain.rate:.0f} tasks/s, "
        f"commit → last end {drain.seconds:.2f} s, {drain.twice} ran twice, "
        f"{drain.missing} never, {drain.unfinished} rows unfinished, split {drain.split}",
        flush=True,
    )


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


def measure_kill(engine: Engine) -> None:
    notes = engine.figures.killed
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
    print(f"  {engine.label}, kill -9 mid-task: " + "; ".join(notes), flush=True)


def fsync_ms(scratch: Path) -> float:
    """The disk's pace at the moment: p50 of 50 fsyncs of a 4 KiB append. Both SQLite
    (synchronous=FULL) and PostgreSQL wait for one at each commit, and the machine's
    other work can make them many times slower from one minute to the next."""
    samples = []
    with (scratch / "fsync-probe").open("ab") as probe:
        for _ in range(50):
            probe.write(b"x" * 4096)
            probe.flush()
            start = time.perf_counter()
            os.fsync(probe.fileno())
            samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def measure_all(engines: list[Engine], post_url: str, scratch: Path) -> list[float]:
    """Every measurement, engine after engine, so all see the same minutes of machine
    noise; the drains in ``ROUNDS`` rounds, each round in another engine order. Answers
    the disk's pace at each round's start."""
    print("\nWhat enqueueing adds to a transaction (alternating with and without)")
    for engine in engines:
        measure_enqueue(engine)
    print("\nCommit → start with an idle worker")
    for engine in engines:
        for interval in A_INTERVALS if engine.django_tasks else (None,):
            measure_latency(engine, interval)
    paces = []
    for round_ in range(ROUNDS):
        paces.append(fsync_ms(scratch))
        print(f"\nDrains, round {round_ + 1} (fsync of 4 KiB: {paces[-1]:.2f} ms)")
        for engine in engines[round_ % len(engines) :] + engines[: round_ % len(engines)]:
            measure_drain(engine, "noop", post_url)
            measure_drain(engine, "post", post_url)
            measure_drain(engine, "noop", post_url, workers=2)
    print("\nA worker killed with SIGKILL mid-task")
    for engine in engines:
        measure_kill(engine)
    return paces


# --- the table --------------------------------------------------------------------------


def table(engines: list[Engine], paces: list[float]) -> None:
    figures = [engine.figures for engine in engines]
    rows: list[tuple[str, list[str]]] = []

    def ratio(f: Figures, variant: str) -> str:
        return f"{f.tx_us[variant]:.0f} µs ({f.tx_us[variant] / f.tx_us['alone']:.2f}×)"

    def rounds(f: Figures, name: str, cell: Callable[[Drain], str]) -> str:
        return " / ".join(cell(drain) for drain in f.drains[name])

    rows.append(
        ("transaction inserting 1 small row, p50", [f"{f.tx_us['alone']:.0f} µs" for f in figures])
    )
    rows.append(("  + enqueue 1 task in it, p50", [ratio(f, "task") for f in figures]))
    rows.append(
        ("    the enqueue call alone, p50", [f"{f.call_us['task']:.0f} µs" for f in figures])
    )
    rows.append(("  + 1 more small row instead, p50", [ratio(f, "row") for f in figures]))
    rows.append(("    the insert alone, p50", [f"{f.call_us['row']:.0f} µs" for f in figures]))
    for label in sorted({label for f in figures for label in f.latency_ms}, reverse=True):
        cells = [f"{f.latency_ms[label]:.0f} ms" if label in f.latency_ms else "—" for f in figures]
        rows.append((f"commit → start, idle worker, p50, {label}", cells))
    for name, what in (("noop", "no-op"), ("post", "HTTP POST"), ("pair", "no-op, 2 workers")):
        rows.append(
            (
                f"{TASKS:,} {what}: tasks/s, first start → last end",
                [rounds(f, name, lambda d: f"{d.rate:.0f}") for f in figures],
            )
        )
        rows.append(
            (
                f"{TASKS:,} {what}: s, commit → last end",
                [rounds(f, name, lambda d: f"{d.seconds:.2f}") for f in figures],
            )
        )
    rows.append(
        (
            "2 workers: ran twice / never ran / unfinished",
            [rounds(f, "pair", lambda d: f"{d.twice}/{d.missing}/{d.unfinished}") for f in figures],
        )
    )
    rows.append(
        (
            "2 workers: tasks each ran",
            [rounds(f, "pair", lambda d: "+".join(map(str, d.split))) for f in figures],
        )
    )

    print(f"\nTask engines, one run on {os.cpu_count()} cores ({time.strftime('%Y-%m-%d %H:%M')})")
    print(
        f"  A = django-tasks {version('django-tasks')} + django-tasks-db {version('django-tasks-db')} (db_worker)"
    )
    print(f"  B = procrastinate {version('procrastinate')} (PsycopgConnector, LISTEN/NOTIFY)")
    print(
        f"  drains: {ROUNDS} rounds (a / b); fsync of 4 KiB at each round's start: "
        + " / ".join(f"{p:.2f} ms" for p in paces)
        + "\n"
    )
    width = max(len(name) for name, _ in rows) + 2
    print(" " * width + "".join(f"{engine.label:>22}" for engine in engines))
    for name, cells in rows:
        print(f"{name:<{width}}" + "".join(f"{cell:>22}" for cell in cells))
    for engine in engines:
        print(f"\nkill -9 mid-task, {engine.label}:")
        for note in engine.figures.killed:
            print(f"  {note}")


def main() -> int:
    scratch = Path(tempfile.mkdtemp(prefix="lens-bench-engines-"))
    suffix = f"{os.getpid()}_{secrets.token_hex(2)}"
    runs = [("django-tasks-db", "sqlite", "SQLite", "a")]
    if postgres_answers():
        runs += [
            ("django-tasks-db", "postgresql", "PostgreSQL", "a"),
            ("procrastinate", "postgresql", "PostgreSQL", "b"),
        ]
    else:
        print(f"PostgreSQL does not answer at {PG_URL}: only django-tasks-db on SQLite")
    engines: list[Engine] = []
    try:
        with ExitStack() as stack:
            server = stack.enter_context(receiver())
            post_url = f"http://127.0.0.1:{server.server_address[1]}/hook"
            for name, kind, db_label, letter in runs:
                url = stack.enter_context(
                    database(kind, f"lens_bench_tasks_{letter}_{suffix}", scratch)
                )
                engine = Engine(name, db_label, url, scratch)
                stack.callback(engine.close)
                engine.client.call("setup")
                engines.append(engine)
            paces = measure_all(engines, post_url, scratch)
            posts = sum(len(engine.figures.drains["post"]) for engine in engines) * TASKS
            if server.received != posts:
                raise RuntimeError(f"{server.received} POSTs received, {posts} sent")
        table(engines, paces)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
