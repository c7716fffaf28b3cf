"""``make run`` serves the demo with the production server in a development
configuration: kept-alive requests are answered at once (``runserver`` held each one
back ~40 ms: its response went out in several writes, and Nagle's algorithm waited for
the client's delayed ACK), and a change to the code or the templates reloads it.
"""

from __future__ import annotations

import http.client
import os
import time
from pathlib import Path

import pytest

from tests.serving import ROOT, clean_env, serving

pytestmark = pytest.mark.slow

# A stalled answer takes at least the delayed-ACK timer (40 ms on Linux); a page of the
# demo answers in a few milliseconds even on a busy machine.
STALL_SECONDS = 0.040


def test_make_run_answers_kept_alive_requests_without_a_stall(tmp_path: Path) -> None:
    env = clean_env(DEBUG="1", DATABASE_URL=f"sqlite:///{tmp_path / 'demo.sqlite3'}")
    with serving(env, tmp_path / "run.log", target="run") as server:
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        times = []
        for _ in range(20):
            began = time.perf_counter()
            connection.request("GET", "/accounts/login/")
            response = connection.getresponse()
            body = response.read()
            times.append(time.perf_counter() - began)
            assert response.status == 200
            assert not response.will_close  # one connection throughout
        connection.close()
        # A new file where templates live: the server reloads and answers again.
        probe = ROOT / "templates" / f"_reload_probe_{os.getpid()}.html"
        try:
            probe.write_text("probe\n")
            deadline = time.monotonic() + 60
            while "Changes detected" not in server.log.read_text():
                assert time.monotonic() < deadline, server.log.read_text()
                time.sleep(0.2)
        finally:
            probe.unlink()
        deadline = time.monotonic() + 60
        while not server.healthy():
            assert time.monotonic() < deadline, server.log.read_text()
            time.sleep(0.2)
    assert b'name="username"' in body
    log = server.log.read_text()
    assert "new demo memories" in log  # seed_demo ran first
    # ... and said where this server answers.
    assert f"Log in at http://127.0.0.1:{server.port}/accounts/login/" in log
    assert min(times) < STALL_SECONDS, times
