"""``python manage.py worker``: runs the webhook sender (SPEC §16), and the VACUUM an
erasure from the browser queues on PostgreSQL (``memory.erasure.vacuum``).

The sender's tasks run on django-tasks' database worker; this is the one command to
start it, whatever the engine. On start it queues again every message a killed worker
left half-sent and starts the minute sweep that keeps doing so; then it works until
stopped. Several can run at once, on one machine or many: each task row is taken by one
worker (``SKIP LOCKED`` on PostgreSQL), and each try of a message by one sender.
"""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand

from webhooks.sweeping import start_sweeping


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
        stranded = start_sweeping()
        if stranded and options["verbosity"]:
            self.stdout.write(f"{stranded} messages queued again after an earlier stop.")
        call_command(
            "db_worker",
            interval=options["interval"],
            batch=options["batch"],
            reload=options["reload"],
            startup_delay=False,
            verbosity=options["verbosity"],
        )
