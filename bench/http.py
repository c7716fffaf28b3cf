"""``make bench-http``: this server under ``make serve`` against etcd, over loopback HTTP,
measured by one client in one run.

For each database (SQLite, then PostgreSQL when it answers at ``BENCH_PG_URL``), a
scratch database is seeded (``bench.http_seed``), ``make serve`` is started on a free
port, and each operation is timed with 1 and 8 keep-alive clients. etcd (Debian's
``etcd-server``) runs beside it on free ports; key/value get and put alternate between
the two servers round by round, so both see the same machine noise. Throughput with 8
connections is also measured with ``wrk`` on both sides. Then the get's floor: its
statement through the driver alone, the store's read and the served application in
process (``bench.kv_floor``), beside the same get over HTTP. Nothing here imports
Django: the server is a separate process, as in production.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.http_load import Call, Samples, load

ROOT = Path(__file__).resolve().parent.parent
PG_URL = os.environ.get("BENCH_PG_URL", "postgres://postgres@127.0.0.1:5432/postgres")
ROUNDS = int(os.environ.get("BENCH_HTTP_ROUNDS", "5"))
WRK_SECONDS = int(os.environ.get("BENCH_HTTP_WRK_SECONDS", "4"))
# BENCH_HTTP_ONLY=mcp measures only MCP beside the API; =api everything else.
ONLY = os.environ.get("BENCH_HTTP_ONLY", "")
PUT_KEY = "bench.put"
# A put's payload: about the size of the key read (a "must" note).
PUT_PAYLOAD = "Remember the user's time zone and units. " * 8


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until(probe: Callable[[], bool], what: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if probe():
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{what} did not start within {seconds:g} s")


def get_status(port: int, path: str) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
    try:
        connection.request("GET", path)
        return connection.getresponse().status
    finally:
        connection.close()


# --- the two servers -----------------------------------------------------------------


@contextmanager
def etcd(scratch: Path) -> Iterator[int]:
    """A single-member etcd on free ports with its data on this disk (it fsyncs its
    write-ahead log before acknowledging a put)."""
    binary = shutil.which("etcd")
    if binary is None:
        raise SystemExit(
            "etcd is not installed (apt-get install etcd-server; make bench-http does)"
        )
    client, peer = free_port(), free_port()
    log = (scratch / "etcd.log").open("w")
    process = subprocess.Popen(
        [
            binary,
            "--name=bench",
            f"--data-dir={scratch / 'etcd'}",
            f"--listen-client-urls=http://127.0.0.1:{client}",
            f"--advertise-client-urls=http://127.0.0.1:{client}",
            f"--listen-peer-urls=http://127.0.0.1:{peer}",
            f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
            f"--initial-cluster=bench=http://127.0.0.1:{peer}",
            "--log-level=error",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_until(lambda: get_status(client, "/health") == 200, "etcd")
        yield client
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


@contextmanager
def scratch_database(kind: str, scratch: Path) -> Iterator[str]:
    if kind == "sqlite":
        yield f"sqlite:///{scratch / 'bench-http.sqlite3'}"
        return
    import psycopg  # only the PostgreSQL run needs it

    name = f"lens_bench_http_{secrets.token_hex(4)}"
    with psycopg.connect(PG_URL, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield urllib.parse.urlparse(PG_URL)._replace(path=f"/{name}").geturl()
    finally:
        with psycopg.connect(PG_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def postgres_answers() -> bool:
    try:
        import psycopg

        with psycopg.connect(PG_URL, connect_timeout=3):
            return True
    except Exception:
        return False


def server_env(database_url: str, scratch: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "HTTPS", "DB_CONN_MAX_AGE", "DB_POOL")
    }
    env.update(
        DEBUG="0",
        SECRET_KEY=secrets.token_urlsafe(50),
        ALLOWED_HOSTS="127.0.0.1",
        DATABASE_URL=database_url,
        STATIC_ROOT=str(scratch / "static"),
    )
    return env


def module_facts(module: str, args: list[str], env: dict[str, str], what: str) -> Any:
    """Run ``module`` in a process of its own; its last line is its facts as JSON."""
    result = subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"{what} failed:\n{result.stdout}\n{result.stderr}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def seed(env: dict[str, str], module: str = "bench.http_seed") -> dict[str, str]:
    """Run a seeding module in a process of its own; its last line is its JSON facts."""
    info: dict[str, str] = module_facts(module, [], {**env, "DEBUG": "1"}, "seeding")
    return info


@contextmanager
def running(
    command: list[str], port: int, env: dict[str, str], scratch: Path, probe: str = "/healthz"
) -> Iterator[int]:
    """``command``, which listens on ``port``, in a process group of its own once
    ``probe`` answers (any status); stopped with SIGTERM (SIGKILL after 30 s)."""
    name = Path(command[0]).name
    log = (scratch / f"{name}-{port}.log").open("w")
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:

        def up() -> bool:
            status = get_status(port, probe)
            return status == 200 if probe == "/healthz" else status > 0

        wait_until(up, " ".join(command[:2]), 120)
        yield port
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        log.close()


@contextmanager
def serve(env: dict[str, str], scratch: Path) -> Iterator[int]:
    """``make serve`` exactly as a deployment runs it, on a free loopback port."""
    port = free_port()
    with running(["make", "-s", "serve", "HOST=127.0.0.1", f"PORT={port}"], port, env, scratch):
        yield port


@contextmanager
def serve_mcp(env: dict[str, str], scratch: Path) -> Iterator[int]:
    """``manage.py mcp --http`` (streamable HTTP at ``/mcp``) on the same database, as
    ``make serve`` configures a process (DEBUG off, PostgreSQL's pool on)."""
    port = free_port()
    command = [sys.executable, "manage.py", "mcp", "--http", f"127.0.0.1:{port}"]
    with running(command, port, {**env, "DB_POOL": "1"}, scratch, probe="/mcp"):
        yield port


# --- the calls -----------------------------------------------------------------------


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def etcd_put(port: int, key: str, value: str) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    body = json.dumps({"key": b64(key), "value": b64(value)})
    connection.request("POST", "/v3/kv/put", body=body)
    assert connection.getresponse().status == 200
    connection.close()


def sign_in(port: int, username: str, password: str) -> str:
    """The session cookie of a person signed in through the login form."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request("GET", "/accounts/login/")
    response = connection.getresponse()
    page = response.read().decode()
    csrf_cookie = _cookie(response.getheader("Set-Cookie") or "", "csrftoken")
    form_token = page.split('name="csrfmiddlewaretoken" value="', 1)[1].split('"', 1)[0]
    form = urllib.parse.urlencode(
        {"username": username, "password": password, "csrfmiddlewaretoken": form_token}
    )
    connection.request(
        "POST",
        "/accounts/login/",
        body=form,
        headers={
            "Content-Type": "application/x-www-form-urlencoded",
            "Cookie": f"csrftoken={csrf_cookie}",
            "Referer": f"http://127.0.0.1:{port}/accounts/login/",
        },
    )
    response = connection.getresponse()
    response.read()
    session = _cookie(response.getheader("Set-Cookie") or "", "sessionid")
    connection.close()
    if response.status != 302 or not session:
        raise RuntimeError(f"signing in failed ({response.status})")
    return session


def _cookie(header: str, name: str) -> str:
    for part in header.replace(",", ";").split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return ""


@dataclass(frozen=True)
class Pair:
    """One operation on both servers: ours and etcd's equivalent (or None)."""

    name: str
    ours: Call
    etcd: Call | None


def calls(info: dict[str, str]) -> list[Pair]:
    bearer = {"Authorization": f"Bearer {info['token']}", "Content-Type": "application/json"}
    range_body = json.dumps({"key": b64(info["read_key"])}).encode()
    put_body = json.dumps({"key": b64(PUT_KEY), "value": b64(PUT_PAYLOAD)}).encode()
    ours_put = json.dumps({"payload": PUT_PAYLOAD}).encode()

    def memory(n: int) -> bytes:
        content = f"The user mentioned fact number {n} worth keeping."
        return json.dumps({"kind": "profile", "content": content}).encode()

    return [
        Pair(
            "key/value get",
            Call("GET", f"/api/kv/{info['read_key']}", bearer),
            Call("POST", "/v3/kv/range", body=lambda _n: range_body),
        ),
        Pair(
            "key/value put",
            Call("PUT", f"/api/kv/{PUT_KEY}", bearer, body=lambda _n: ours_put, expect=(200, 201)),
            Call("POST", "/v3/kv/put", body=lambda _n: put_body),
        ),
        Pair(
            "memory_save",
            Call(
                "POST",
                f"/api/agents/{info['saver']}/memories",
                bearer,
                body=memory,
                expect=(201,),
            ),
            None,
        ),
        Pair(
            "composition endpoint (40 sections, 1,000 memories)",
            Call(
                "GET",
                f"/api/agents/{info['big']}/composition",
                {**bearer, "Accept-Encoding": "gzip"},
            ),
            None,
        ),
    ]


# A client that has initialised speaks this version: each call is one POST, answered in
# JSON (the server is stateless), so the same client times it as it times the API.
MCP_PROTOCOL_VERSION = "2025-06-18"


def mcp_call(
    info: dict[str, str], tool: str, arguments: Callable[[int], dict[str, object]]
) -> Call:
    headers = {
        "Authorization": f"Bearer {info['token']}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MCP_PROTOCOL_VERSION,
    }

    def body(n: int) -> bytes:
        call = {"name": tool, "arguments": arguments(n)}
        message = {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": call}
        return json.dumps(message).encode()

    return Call("POST", "/mcp", headers, body=body)


def mcp_pairs(info: dict[str, str]) -> list[Pair]:
    """Each tool call beside the same API call (``etcd`` here is the API's)."""
    api = {pair.name: pair.ours for pair in calls(info)}

    def memory(n: int) -> dict[str, object]:
        content = f"The user mentioned fact number {n} worth keeping, through MCP."
        return {"agent": info["saver"], "kind": "profile", "content": content}

    return [
        Pair(
            "MCP kv_store read",
            mcp_call(info, "kv_store", lambda _n: {"command": "read", "id": info["read_key"]}),
            api["key/value get"],
        ),
        Pair("MCP memory_save", mcp_call(info, "memory_save", memory), api["memory_save"]),
    ]


def check_mcp(port: int, call: Call) -> None:
    """One call answered as a tool result, not a tool error (the timed calls check only
    the status)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    assert call.body is not None
    connection.request(call.method, call.path, body=call.body(10**9), headers=call.headers)
    answer = json.loads(connection.getresponse().read())
    connection.close()
    if "result" not in answer or answer["result"].get("isError"):
        raise RuntimeError(f"the MCP call failed: {answer}")


def lens_page(info: dict[str, str], session: str) -> Pair:
    cookie = {"Cookie": f"sessionid={session}"}
    return Pair(
        "lens page (40 sections, 1,000 memories)",
        Call("GET", f"/agents/{info['big']}/?team={info['team']}", cookie),
        None,
    )


# How many requests per client per round: cheap calls get more.
# The p50 of one client, as a multiple of etcd's (issue targets, by database).
TARGETS = {
    "key/value get": {"sqlite": 1.2, "postgresql": 1.5},
    "key/value put": {"sqlite": 1.6, "postgresql": 2.0},
}

# MCP's call against the API's same call, p50, by clients (issue targets).
MCP_TARGETS = {
    "MCP kv_store read": {1: 1.3, 8: 2.0},
    "MCP memory_save": {1: 1.2, 8: 2.0},
}

PER_CLIENT = {
    "key/value get": (300, 60),
    "key/value put": (150, 30),
    "memory_save": (100, 20),
    "MCP kv_store read": (150, 30),
    "MCP memory_save": (100, 20),
    "composition endpoint (40 sections, 1,000 memories)": (20, 4),
    "lens page (40 sections, 1,000 memories)": (6, 2),
}


@dataclass
class Measured:
    ours: Samples
    etcd: Samples | None


def measure(pair: Pair, port: int, etcd_port: int, clients: int) -> Measured:
    one, eight = PER_CLIENT[pair.name]
    per_client = one if clients == 1 else eight
    ours, theirs = Samples(), Samples()
    rounds = ROUNDS if pair.etcd is not None or per_client > 5 else max(2, ROUNDS // 2)
    for _ in range(rounds):
        ours.add(load(port, pair.ours, clients, per_client))
        if pair.etcd is not None:
            theirs.add(load(etcd_port, pair.etcd, clients, per_client))
    return Measured(ours, theirs if pair.etcd is not None else None)


# --- wrk -----------------------------------------------------------------------------


def wrk(port: int, call: Call, scratch: Path) -> float:
    """Requests per second from ``wrk`` with 8 connections on 2 threads."""
    script = scratch / "wrk.lua"
    body = call.body(0).decode() if call.body is not None else None
    lines = [f"wrk.method = {json.dumps(call.method)}"]
    if body is not None:
        lines.append(f"wrk.body = {json.dumps(body)}")
    for name, value in call.headers.items():
        lines.append(f"wrk.headers[{json.dumps(name)}] = {json.dumps(value)}")
    script.write_text("\n".join(lines) + "\n")
    result = subprocess.run(
        [
            "wrk",
            "-t2",
            "-c8",
            f"-d{WRK_SECONDS}s",
            "-s",
            str(script),
            f"http://127.0.0.1:{port}{call.path}",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    if "Non-2xx" in result.stdout:
        raise RuntimeError(f"wrk saw errors:\n{result.stdout}")
    for line in result.stdout.splitlines():
        if line.startswith("Requests/sec:"):
            return float(line.split()[1])
    raise RuntimeError(f"no figure from wrk:\n{result.stdout}")


# --- reporting -----------------------------------------------------------------------


def row(name: str, samples: Samples) -> str:
    return (
        f"    {name:<8} p50 {samples.p50:7.2f} ms   p99 {samples.p99:7.2f} ms   "
        f"{samples.throughput:8.0f} req/s"
    )


def verdict(value: float, target: float, *, at_least: bool = False) -> str:
    met = value >= target if at_least else value <= target
    sign = "≥" if at_least else "≤"
    return f"(target {sign} {target:g}: {'ok' if met else 'MISSED'})"


def measure_mcp(
    info: dict[str, str], port: int, mcp_port: int, title: str, summary: list[str]
) -> None:
    """Each tool call through ``manage.py mcp --http`` beside the same API call under
    ``make serve``, rounds alternating, same client."""
    for pair in mcp_pairs(info):
        check_mcp(mcp_port, pair.ours)
        for clients in (1, 8):
            measured = measure(pair, mcp_port, port, clients)
            assert measured.etcd is not None
            label = f"{pair.name}, {clients} client{'s' if clients > 1 else ''}"
            print(f"  {label}")
            print(row("MCP", measured.ours))
            print(row("API", measured.etcd))
            ratio = measured.ours.p50 / measured.etcd.p50
            print(f"    ratio    p50 {ratio:.2f}×")
            target = MCP_TARGETS[pair.name][clients]
            summary.append(
                f"{title}: {pair.name} p50, {clients} client{'s' if clients > 1 else ''}: "
                f"{measured.ours.p50:.2f} ms, {ratio:.2f}× the API's {verdict(ratio, target)}"
            )


def mcp_without_front(
    env: dict[str, str],
    scratch: Path,
    info: dict[str, str],
    mcp_port: int,
    title: str,
    summary: list[str],
) -> None:
    """Each tool call through the front against the SDK's own session (``MCP_FRONT=0``),
    two servers over the same database, alternating round by round."""
    with serve_mcp({**env, "MCP_FRONT": "0"}, scratch) as session_port:
        for pair in mcp_pairs(info):
            measured = measure(Pair(pair.name, pair.ours, pair.ours), mcp_port, session_port, 1)
            assert measured.etcd is not None
            ratio = measured.ours.p50 / measured.etcd.p50
            print(f"  {pair.name} through the front (MCP_FRONT=1) and the SDK's session")
            print(row("front", measured.ours))
            print(row("session", measured.etcd))
            print(f"    ratio    p50 {ratio:.2f}×")
            summary.append(
                f"{title}: {pair.name} through the front against the SDK's session: "
                f"p50 {ratio:.2f}×"
            )


def run_backend(kind: str, scratch: Path, etcd_port: int, summary: list[str]) -> None:
    title = "SQLite" if kind == "sqlite" else "PostgreSQL"
    with scratch_database(kind, scratch) as url:
        env = server_env(url, scratch)
        started = time.perf_counter()
        info = seed(env)
        print(
            f"\n{title}: seeded in {time.perf_counter() - started:.0f} s; durability: "
            f"{info['durability']}; etcd: fsync of its log before each acknowledged put"
        )
        with serve(env, scratch) as port:
            if ONLY != "api":
                with serve_mcp(env, scratch) as mcp_port:
                    measure_mcp(info, port, mcp_port, title, summary)
                    mcp_without_front(env, scratch, info, mcp_port, title, summary)
            if ONLY == "mcp":
                return
            etcd_put(etcd_port, info["read_key"], info["read_payload"])
            pairs = [
                *calls(info),
                lens_page(info, sign_in(port, info["username"], info["password"])),
            ]
            get_p50: dict[str, float] = {}
            for pair in pairs:
                for clients in (1, 8):
                    measured = measure(pair, port, etcd_port, clients)
                    if pair.name == "key/value get" and clients == 1:
                        assert measured.etcd is not None
                        get_p50 = {"ours": measured.ours.p50, "etcd": measured.etcd.p50}
                    label = f"{pair.name}, {clients} client{'s' if clients > 1 else ''}"
                    print(f"  {label}")
                    print(row("ours", measured.ours))
                    if measured.etcd is not None:
                        print(row("etcd", measured.etcd))
                        ratio = measured.ours.p50 / measured.etcd.p50
                        speed = measured.ours.throughput / measured.etcd.throughput
                        print(f"    ratio    p50 {ratio:.2f}×   throughput {speed:.2f}×")
                        if clients == 8 and pair.name == "key/value get":
                            summary.append(
                                f"{title}: get p50, 8 keep-alive clients: {ratio:.2f}× etcd "
                                f"{verdict(ratio, 2.0)}"
                            )
                        if clients == 1:
                            target = TARGETS[pair.name][kind]
                            summary.append(
                                f"{title}: {pair.name} p50, 1 client: {ratio:.2f}× etcd "
                                f"{verdict(ratio, target)}"
                            )
                    if pair.name == "memory_save" and clients == 1:
                        target = 4.0 if kind == "sqlite" else 6.0
                        p50 = measured.ours.p50
                        summary.append(
                            f"{title}: memory_save p50, 1 client: {p50:.2f} ms "
                            f"{verdict(p50, target)}"
                        )
                    if pair.name.startswith("composition") and clients == 1:
                        p50 = measured.ours.p50
                        goal = verdict(
                            p50, 5.0
                        )  # an unchanged agent (bench.compose_http: after a change)
                        summary.append(f"{title}: composition p50, 1 client: {p50:.2f} ms {goal}")
                    if pair.name.startswith("lens page") and clients == 8:
                        summary.append(
                            f"{title}: lens page, 8 clients: p50 {measured.ours.p50:.0f} ms, "
                            f"p99 {measured.ours.p99:.0f} ms"
                        )
            print("  wrk, 8 connections, requests/s (ours / etcd, alternating)")
            for pair in pairs[:2]:
                assert pair.etcd is not None
                ours = [wrk(port, pair.ours, scratch), 0.0]
                theirs = [wrk(etcd_port, pair.etcd, scratch), 0.0]
                ours[1] = wrk(port, pair.ours, scratch)
                theirs[1] = wrk(etcd_port, pair.etcd, scratch)
                mine, etcds = sum(ours) / 2, sum(theirs) / 2
                ratio = mine / etcds
                print(f"    {pair.name:<14} {mine:8.0f} / {etcds:8.0f}   {ratio:.2f}×")
                if pair.name == "key/value get":
                    summary.append(
                        f"{title}: get throughput, wrk 8 connections: {ratio:.2f}× etcd "
                        f"{verdict(ratio, 0.5, at_least=True)}"
                    )
        without_front(env, scratch, pairs[0], title, summary)
        floor(env, info, get_p50, title, summary)


def floor(
    env: dict[str, str],
    info: dict[str, str],
    get_p50: dict[str, float],
    title: str,
    summary: list[str],
) -> None:
    """The get's statement through the driver alone, the store's read and the served
    application in process (``bench.kv_floor``, a process of its own on the same
    database, the pool on as under ``make serve``), beside the same get over HTTP."""
    layers: dict[str, float] = module_facts(
        "bench.kv_floor", [info["token"], info["read_key"]], {**env, "DB_POOL": "1"}, "the floor"
    )
    driver = "psycopg" if title == "PostgreSQL" else "sqlite3"
    http_us, etcd_us = get_p50["ours"] * 1000, get_p50["etcd"] * 1000
    print("  key/value get, one client, p50: where the time goes")
    print(f"    the statement through {driver} alone   {layers['driver']:7.0f} µs")
    print(f"    store.read_as (Django's connection)  {layers['store']:7.0f} µs")
    print(f"    the served application in process    {layers['served']:7.0f} µs")
    print(f"    over HTTP (make serve)               {http_us:7.0f} µs   etcd {etcd_us:.0f} µs")
    summary.append(
        f"{title}: get floor: the statement through {driver} alone {layers['driver']:.0f} µs, "
        f"store.read_as {layers['store']:.0f} µs, served in process {layers['served']:.0f} µs, "
        f"over HTTP {http_us:.0f} µs (etcd {etcd_us:.0f} µs)"
    )


def without_front(
    env: dict[str, str], scratch: Path, get: Pair, title: str, summary: list[str]
) -> None:
    """The key/value get through Django alone (``API_FRONT=0``) against the front, on
    two servers over the same database, alternating round by round."""
    print("  key/value get through the front (API_FRONT=1) and Django alone (API_FRONT=0)")
    with serve(env, scratch) as front_port, serve({**env, "API_FRONT": "0"}, scratch) as port:
        front, alone = Samples(), Samples()
        for _ in range(ROUNDS):
            front.add(load(front_port, get.ours, 1, PER_CLIENT[get.name][0]))
            alone.add(load(port, get.ours, 1, PER_CLIENT[get.name][0]))
        print(row("front", front))
        print(row("Django", alone))
        rates = [wrk(front_port, get.ours, scratch), wrk(port, get.ours, scratch)]
        rates += [wrk(front_port, get.ours, scratch), wrk(port, get.ours, scratch)]
        front_rate, alone_rate = (rates[0] + rates[2]) / 2, (rates[1] + rates[3]) / 2
        print(f"    wrk      front {front_rate:8.0f} / Django {alone_rate:8.0f} req/s")
    summary.append(
        f"{title}: get through the front against Django alone: p50 "
        f"{front.p50 / alone.p50:.2f}×, wrk {front_rate / alone_rate:.2f}×"
    )


def each_database(prefix: str, heading: str, run: Callable[[str, Path, list[str]], None]) -> int:
    """``run(kind, scratch, summary)`` on SQLite, then on PostgreSQL when it answers, in a
    scratch folder removed afterwards; then the summary's lines under "Targets"."""
    scratch = Path(tempfile.mkdtemp(prefix=prefix))
    kinds = ["sqlite"] + (["postgresql"] if postgres_answers() else [])
    print(heading)
    summary: list[str] = []
    try:
        for kind in kinds:
            run(kind, scratch, summary)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print("\nTargets")
    for line in summary:
        print(f"  {line}")
    return 0


def main() -> int:
    if not postgres_answers():
        print(f"PostgreSQL does not answer at {PG_URL}: measuring SQLite only")
    heading = "HTTP benchmark — make serve against etcd on loopback, keep-alive clients"
    with tempfile.TemporaryDirectory(prefix="lens-bench-etcd-") as place, etcd(Path(place)) as port:
        return each_database(
            "lens-bench-http-",
            heading,
            lambda kind, scratch, summary: run_backend(kind, scratch, port, summary),
        )


if __name__ == "__main__":
    sys.exit(main())
