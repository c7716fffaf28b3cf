"""``python manage.py worker``: runs the webhook sender (SPEC §16), and the VACUUM an
erasure from the browser queues on PostgreSQL (``memory.erasure.vacuum``).

The sender's tasks run on django-tasks' database worker; this is the one command to
start it, whatever the engine. On start it queues again every message a killed worker
left half-sent and starts the minute sweep that keeps doing so; then it works until
stopped. Several can run at once, on one machine or many: each task row is taken by one
worker (``SKIP LOCKED`` on PostgreSQL), and each try of a message by one sender.

Within a process, ``--threads`` (``WORKER_THREADS``, default 4) of the engine's workers
run side by side, each on a thread with its own database connection (closed when the
thread ends), so a task waiting on a receiver that hangs holds one thread while the
others send to the endpoints that answer. One thread per task and one try in flight per
endpoint (``webhooks.sending``) bound what a process holds: its threads, their
connections and at most one socket each.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from argparse import ArgumentParser
from io import TextIOBase
from types import FrameType
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import connections
from django.utils.autoreload import DJANGO_AUTORELOAD_ENV, run_with_reloader
from django.utils.crypto import get_random_string
from django_tasks_db.compat import TASKS_LOGGER
from django_tasks_db.management.commands.db_worker import Worker

from webhooks.sweeping import start_sweeping

logger = logging.getLogger("django_tasks_db")

# More threads than this would hold as many database connections per worker process:
# run more processes instead (docs/scaling.md).
THREADS_MAX = 32


class Pool:
    """``threads`` of the engine's workers in one process, stopped together."""

    def __init__(self, threads: int, interval: float, batch: bool) -> None:
        name = get_random_string(24)
        self.workers = [
            Worker(
                queue_names=["default"],
                interval=interval,
                batch=batch,
                backend_name="default",
                startup_delay=False,
                max_tasks=None,
                worker_id=f"{name}-{n}",
                excluded_queue_names=[],
            )
            for n in range(threads)
        ]
        self.stopping = False

    def run(self) -> None:
        threads = [
            threading.Thread(target=_run, args=[worker], name=f"worker-{n}", daemon=True)
            for n, worker in enumerate(self.workers)
        ]
        for thread in threads:
            thread.start()
        # Joined with a timeout, so a signal is handled at once on the main thread.
        while any(thread.is_alive() for thread in threads):
            for thread in threads:
                thread.join(0.2)

    def configure_signals(self) -> None:
        for name in ("SIGINT", "SIGTERM", "SIGQUIT"):
            if hasattr(signal, name):
                signal.signal(getattr(signal, name), self.stop)

    def stop(self, signum: int, frame: FrameType | None) -> None:
        """The first signal lets each thread finish its task (a send ends within its
        deadline); a second ends the process at once (the sweep sends again what it cut
        short)."""
        if self.stopping:
            logger.warning("Received %s - terminating current tasks.", signal.strsignal(signum))
            sys.exit(1)
        logger.warning(
            "Received %s - shutting down gracefully... (press Ctrl+C again to force)",
            signal.strsignal(signum),
        )
        self.stopping = True
        for worker in self.workers:
            worker.running = False
        if not any(worker.running_task for worker in self.workers):
            sys.exit(0)


def _pool_size() -> int | None:
    """How many connections PostgreSQL's pool (``DB_POOL=1``) lends a process, if it is
    on: more threads than that would only wait for one."""
    pool = settings.DATABASES["default"].get("OPTIONS", {}).get("pool")
    size = pool.get("max_size") if isinstance(pool, dict) else None
    return size if isinstance(size, int) else None


def _configure_logging(stdout: TextIOBase, verbosity: int) -> None:
    """The engine's task log on ``stdout`` at the command's verbosity, as ``db_worker``
    sets it."""
    level = {0: logging.CRITICAL, 1: logging.INFO}.get(verbosity, logging.DEBUG)
    for log in (logging.getLogger(TASKS_LOGGER), logger):
        log.setLevel(level)
        if not log.hasHandlers():
            log.addHandler(logging.StreamHandler(stdout))


def _run(worker: Worker) -> None:
    try:
        worker.run()
    finally:
        # Each thread's connection is its own: closed with it, so a worker never holds
        # more connections than it has threads.
        connections.close_all()


class Command(BaseCommand):
    help = (
        "Run the webhook sender and the VACUUM queued after an erasure (several may run at once)."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--interval",
            type=float,
            default=1.0,
            help="Seconds to wait between looks when nothing is due (default 1).",
        )
        parser.add_argument(
            "--threads",
            type=int,
            default=None,
            help="Tasks run at once, each on a thread with its own database connection "
            "(default WORKER_THREADS, 4).",
        )
        parser.add_argument(
            "--batch",
            action="store_true",
            help="Send everything due, then exit (for scripts and tests).",
        )
        parser.add_argument(
            "--reload",
            action="store_true",
            help="Restart when the code changes (`make run`; never in production, where a "
            "restart would cut a send short).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        threads = options["threads"]
        if threads is None:
            threads = settings.WORKER_THREADS
        if not 1 <= threads <= THREADS_MAX:
            raise CommandError(f"--threads: from 1 to {THREADS_MAX}")
        threads = min(threads, _pool_size() or threads)
        if options["interval"] < 0:
            raise CommandError("--interval: zero or more seconds")
        _configure_logging(self.stdout, options["verbosity"])
        stranded = start_sweeping()
        if stranded and options["verbosity"]:
            self.stdout.write(f"{stranded} messages queued again after an earlier stop.")
        connections.close_all()  # the threads open their own
        pool = Pool(threads, options["interval"], options["batch"])
        if options["reload"] and not options["batch"]:
            if os.environ.get(DJANGO_AUTORELOAD_ENV) == "true":
                # Only the reloader's child handles the signals, as ``db_worker`` does.
                pool.configure_signals()
            run_with_reloader(pool.run)
            return
        pool.configure_signals()
        pool.run()
