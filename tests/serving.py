"""Running the production path from tests: an environment free of the deployment's own
settings, a free loopback port, and ``make serve`` in a process group of its own, so the
whole server (make, the server's main process, its workers) is stopped or killed at once.
"""

from __future__ import annotations

import http.client
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import sql

ROOT = Path(__file__).resolve().parents[1]  # tests/ -> the project

# What a deployment's environment may hold that would change what these tests see.
DEPLOYMENT_VARIABLES = (
    "DEBUG",
    "SECRET_KEY",
    "ALLOWED_HOSTS",
    "DATABASE_URL",
    "HTTPS",
    "SECURE_COOKIES",
    "CSRF_TRUSTED_ORIGINS",
    "DB_POOL",
    "DB_CONN_MAX_AGE",
    "DB_SERVER_SIDE_CURSORS",
    "SQLITE_SYNCHRONOUS",
    "EMAIL_URL",
    "EMAIL_HOST",
    "STATIC_ROOT",
    "WEB_CONCURRENCY",
    "SERVER_THREADS",
    "SERVER_BACKLOG",
    "REQUEST_BODY_TIMEOUT",
    "FORWARDED_ALLOW_IPS",
    "WORKERS_LIFETIME",
    "WORKERS_MAX_RSS",
    "ACCESS_LOG",
    # Set by the browser tests' fixture for their own process; a server started from a
    # test must run with Django's async-safety check, as a deployment does.
    "DJANGO_ALLOW_ASYNC_UNSAFE",
)


def strong_key() -> str:
    return secrets.token_urlsafe(50)


def clean_env(**env: str) -> dict[str, str]:
    # OTEL_*: a deployment's tracing settings (lens/serving/telemetry.py).
    base = {
        k: v
        for k, v in os.environ.items()
        if k not in DEPLOYMENT_VARIABLES and not k.startswith("OTEL_")
    }
    base.update(DJANGO_SETTINGS_MODULE="lens.settings", **env)
    return base


def run_python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``python -c code`` in the project, in a clean environment plus ``env``."""
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=clean_env(**env),
        capture_output=True,
        text=True,
        timeout=120,
    )


def manage(env: dict[str, str], *args: str) -> str:
    """``python manage.py *args`` in ``env``; its stdout, or the test fails with its output."""
    result = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def production(tmp_path: Path, **env: str) -> dict[str, str]:
    """DEBUG off, a strong key, an allowed host and a scratch SQLite file."""
    return {
        "DEBUG": "0",
        "SECRET_KEY": strong_key(),
        "ALLOWED_HOSTS": "lens.example",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        **env,
    }


# The suite's own database: a server under test gets a scratch one of the same kind.
SESSION_DATABASE_URL = os.environ.get("DATABASE_URL", "")
ON_POSTGRESQL = SESSION_DATABASE_URL.startswith("postgres")


def with_database(url: str, name: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


@contextmanager
def scratch_database(tmp_path: Path, prefix: str) -> Iterator[str]:
    """A ``DATABASE_URL`` of the session's backend that is not the test database (a
    server under test runs in other processes): a file under ``tmp_path`` on SQLite, a
    new database named ``prefix_<random>`` on PostgreSQL, dropped afterwards."""
    if not ON_POSTGRESQL:
        yield f"sqlite:///{tmp_path / f'{prefix}.sqlite3'}"
        return
    name = f"{prefix}_{secrets.token_hex(4)}"
    maintenance = with_database(SESSION_DATABASE_URL, "postgres")
    with psycopg.connect(maintenance, autocommit=True) as connection:
        connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield with_database(SESSION_DATABASE_URL, name)
    finally:
        with psycopg.connect(maintenance, autocommit=True) as connection:
            connection.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Server:
    """A running ``make serve``; its process is the leader of the server's group."""

    process: subprocess.Popen[bytes]
    port: int
    log: Path

    def healthy(self) -> bool:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        try:
            connection.request("GET", "/healthz")
            return connection.getresponse().status == 200
        except (OSError, http.client.HTTPException):
            return False
        finally:
            connection.close()

    def kill(self) -> None:
        """SIGKILL to every process of the server at once: nothing gets to clean up."""
        _signal_group(self.process.pid, signal.SIGKILL)
        self.process.wait()
        _wait_until_gone(self.process.pid, timeout=10)

    def stop(self) -> None:
        """A graceful stop (SIGTERM), then SIGKILL to whatever is left after 30 s."""
        _signal_group(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
            # make goes first; the server's main process may still be stopping its workers.
            _wait_until_gone(self.process.pid, timeout=30)
        except (subprocess.TimeoutExpired, TimeoutError):
            self.kill()


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with suppress(ProcessLookupError):  # already gone
        os.killpg(pgid, sig)


def _wait_until_gone(pgid: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"processes of group {pgid} are still running")
        time.sleep(0.05)


def start_serve(
    env: dict[str, str], log: Path, timeout: float = 120, target: str = "serve"
) -> Server:
    """``make serve`` (or ``target``, e.g. ``run``) on a free loopback port, once
    ``/healthz`` answers 200.

    ``env`` is the whole environment (``clean_env`` plus SECRET_KEY, ALLOWED_HOSTS and
    DATABASE_URL at least). On failure the server is stopped and the log is in the error.
    """
    port = free_port()
    with log.open("wb") as out:
        process = subprocess.Popen(
            ["make", "-s", target, "HOST=127.0.0.1", f"PORT={port}"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    server = Server(process, port, log)
    try:
        deadline = time.monotonic() + timeout
        while not server.healthy():
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"make {target} did not come up:\n{log.read_text()}")
            time.sleep(0.2)
    except BaseException:
        server.stop()
        raise
    return server


@contextmanager
def serving(env: dict[str, str], log: Path, target: str = "serve") -> Iterator[Server]:
    """``start_serve`` that always stops the server, whatever happens inside."""
    server = start_serve(env, log, target=target)
    try:
        yield server
    finally:
        server.stop()
