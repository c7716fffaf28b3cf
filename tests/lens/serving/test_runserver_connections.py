"""``manage.py runserver`` answers each client connection on a thread of its own: a
database connection kept for "the next request" there stays open as long as the
client's kept-alive socket, so PostgreSQL ran out of connections after a few hundred
requests. Persistent connections are kept only where threads live long."""

from __future__ import annotations

import http.client
import os
import subprocess
import sys
import time
from contextlib import ExitStack

import psycopg
import pytest
from django.db import connection

from tests.serving import ROOT, clean_env, free_port

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not os.environ.get("DATABASE_URL", "").startswith("postgres"),
        reason="counts PostgreSQL's connections",
    ),
]

CLIENTS = 60
REQUESTS_EACH = 5


def server_connections(dsn: str, database: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as db:
        row = db.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            [database],
        ).fetchone()
        assert row is not None
        return int(row[0])


@pytest.mark.django_db(transaction=True)
def test_runserver_keeps_no_connection_per_kept_alive_client() -> None:
    settings = connection.settings_dict
    database = settings["NAME"]
    user, host, port = settings["USER"], settings["HOST"], settings["PORT"]
    url = f"postgres://{user}@{host}:{port}/{database}"
    dsn = f"postgresql://{user}@{host}:{port}/postgres"
    connection.close()  # the suite's own connection is not the server's
    before = server_connections(dsn, database)
    http_port = free_port()
    server = subprocess.Popen(
        [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{http_port}"],
        cwd=ROOT,
        env=clean_env(DEBUG="1", DATABASE_URL=url),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        with ExitStack() as stack:
            clients = []
            deadline = time.monotonic() + 60
            while True:  # until the server listens
                try:
                    probe = http.client.HTTPConnection("127.0.0.1", http_port, timeout=10)
                    probe.request("GET", "/healthz")
                    probe.getresponse().read()
                    probe.close()
                    break
                except OSError:
                    assert time.monotonic() < deadline, "runserver did not start"
                    time.sleep(0.2)
            for _ in range(CLIENTS):
                client = http.client.HTTPConnection("127.0.0.1", http_port, timeout=30)
                stack.callback(client.close)
                clients.append(client)
            for _ in range(REQUESTS_EACH):
                for client in clients:
                    client.request("GET", "/healthz")
                    response = client.getresponse()
                    assert response.status == 200
                    response.read()
            time.sleep(0.5)
            # Every client still holds its connection to the server open.
            held = server_connections(dsn, database) - before
        assert held <= 2, f"{held} database connections held for {CLIENTS} idle clients"
    finally:
        server.terminate()
        server.wait(timeout=30)
