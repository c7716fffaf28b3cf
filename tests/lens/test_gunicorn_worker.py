"""The lingering threaded worker (lens/gunicorn_worker.py) under a real gunicorn: one
process with one thread, so any connection that kept the thread would show at once.
"""

from __future__ import annotations

import http.client
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from tests.serving import ROOT, clean_env, free_port, run_python

pytestmark = pytest.mark.slow

# Each answer names the thread that wrote it.
APP = """
import threading

def app(environ, start_response):
    body = str(threading.get_ident()).encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
"""


@pytest.fixture(scope="module")
def port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    folder = tmp_path_factory.mktemp("worker")
    (folder / "probe_app.py").write_text(APP)
    chosen = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "--worker-class",
            "lens.gunicorn_worker.LingeringThreadWorker",
            "--workers",
            "1",
            "--threads",
            "1",
            "--bind",
            f"127.0.0.1:{chosen}",
            "--chdir",
            str(folder),
            "--pythonpath",
            str(ROOT),
            "probe_app:app",
        ],
        env=clean_env(GUNICORN_LINGER_MS="50"),  # long enough to see, short enough to wait
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                get(http.client.HTTPConnection("127.0.0.1", chosen, timeout=5))
                break
            except OSError:
                assert time.monotonic() < deadline, "gunicorn did not start"
                time.sleep(0.1)
        yield chosen
    finally:
        server.terminate()
        server.wait(timeout=30)


def get(connection: http.client.HTTPConnection) -> str:
    connection.request("GET", "/")
    response = connection.getresponse()
    assert response.status == 200
    return response.read().decode()


def test_a_kept_alive_connection_is_answered_request_after_request(port: int) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    answers = {get(connection) for _ in range(50)}
    assert len(answers) == 1  # one thread; and one connection throughout
    connection.close()


def test_a_quiet_connection_gives_its_thread_back(port: int) -> None:
    quiet = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    get(quiet)  # and then nothing, with the connection left open
    other = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    began = time.monotonic()
    get(other)
    # The one thread waited at most the linger (50 ms) on the quiet connection.
    assert time.monotonic() - began < 1.0
    get(quiet)  # still open, served from the poller as in plain gthread
    quiet.close()
    other.close()


def test_a_busy_connection_cannot_starve_another(port: int) -> None:
    stop = threading.Event()
    busy_answers: list[str] = []

    def busy() -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        while not stop.is_set():
            busy_answers.append(get(connection))
        connection.close()

    hog = threading.Thread(target=busy)
    hog.start()
    try:
        while len(busy_answers) < 20:  # the busy client has the thread
            time.sleep(0.01)
        waits = []
        for _ in range(5):
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            began = time.monotonic()
            get(connection)
            waits.append(time.monotonic() - began)
            connection.close()
    finally:
        stop.set()
        hog.join(timeout=10)
    # Back-to-back requests would keep a plain lingering thread forever; here the
    # thread leaves the busy connection as soon as another one waits for it.
    assert max(waits) < 1.0, waits


def test_the_worker_is_what_make_serve_runs() -> None:
    result = run_python("from lens import gunicorn_conf; print(gunicorn_conf.worker_class)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "lens.gunicorn_worker.LingeringThreadWorker"


def test_the_linger_comes_from_the_environment() -> None:
    code = "from lens.gunicorn_worker import linger_seconds; print(linger_seconds())"
    result = run_python(code, GUNICORN_LINGER_MS="0")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "0.0"
