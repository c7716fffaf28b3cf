"""``kv_store read`` through MCP over streamable HTTP, beside ``GET /api/kv/{key}`` over
HTTP, in the same run (SPEC §12): both served by uvicorn on loopback, one client each,
requests interleaved so machine noise hits both alike. Then one team's ``kv_bootstrap``
(the victim) alone and beside 8 other clients of another team running 64-word memory
searches, on the same MCP server: what one team's load costs another.
"""

from __future__ import annotations

import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import httpx2
from django.db import connections
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from bench.memory_bench import _agent
from bench.search_bench import VOCABULARY
from bench.search_bench import _fill as _fill_searchable
from kvstore import store
from lens.models import ApiToken, Team

_RUN = uuid.uuid4().hex[:8]
ROOT = Path(__file__).resolve().parent.parent
ROUNDS, PER_ROUND = 20, 10
BUSY_CLIENTS, SEARCH_WORDS, MEMORIES = 8, 64, 20_000
VICTIM_CALLS = 60
_URL = re.compile(r"MCP server on (http://\S+/mcp)")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise RuntimeError(f"{what} did not start")


def _serve_mcp(log: Path) -> tuple[subprocess.Popen[bytes], str]:
    with log.open("wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, "manage.py", "mcp", "--http", "127.0.0.1:0"],
            cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr,
        )  # fmt: skip
    _wait_for(lambda: bool(_URL.search(log.read_text(errors="replace"))), "the MCP server")
    found = _URL.search(log.read_text(errors="replace"))
    assert found is not None
    return process, found.group(1)


def _serve_api(port: int) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "lens.asgi:application", "--port", str(port),
         "--log-level", "warning"],
        cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip

    def up() -> bool:
        try:
            return httpx2.get(f"http://127.0.0.1:{port}/api/openapi.json").status_code == 200
        except httpx2.HTTPError:
            return False

    _wait_for(up, "the API server")
    return process


async def _timed(samples: list[float], call: Callable[[], Awaitable[object]]) -> None:
    start = time.perf_counter()
    await call()
    samples.append((time.perf_counter() - start) * 1000)


async def _measure(api_url: str, mcp_url: str, raw: str) -> tuple[list[float], list[float]]:
    headers = {"Authorization": f"Bearer {raw}"}
    api_samples: list[float] = []
    mcp_samples: list[float] = []
    async with (
        httpx2.AsyncClient(headers=headers) as api,
        httpx2.AsyncClient(headers=headers) as http,
    ):
        client = Client(streamable_http_client(mcp_url, http_client=http))
        async with client:
            arguments = {"command": "read", "id": "must.bench"}

            async def via_api() -> None:
                response = await api.get(f"{api_url}/api/kv/must.bench")
                assert response.status_code == 200, response.text

            async def via_mcp() -> None:
                result = await client.call_tool("kv_store", arguments)
                assert not result.is_error

            for _ in range(3):  # warm both
                await via_api()
                await via_mcp()
            for _ in range(ROUNDS):
                for _ in range(PER_ROUND):
                    await _timed(api_samples, via_api)
                for _ in range(PER_ROUND):
                    await _timed(mcp_samples, via_mcp)
    return api_samples, mcp_samples


def _victim_samples(client: Client, count: int) -> Callable[[], Awaitable[list[float]]]:
    async def measure() -> list[float]:
        samples: list[float] = []

        async def bootstrap() -> None:
            result = await client.call_tool("kv_bootstrap", {})
            assert not result.is_error

        for _ in range(count):
            await _timed(samples, bootstrap)
        return samples

    return measure


async def _busy_neighbours(
    mcp_url: str, victim_raw: str, busy_raw: str
) -> tuple[list[float], list[float], int]:
    """The victim's latencies alone, then beside BUSY_CLIENTS clients searching memories
    back to back; and how many searches those ran meanwhile."""
    query = " ".join(VOCABULARY[i * 7 % len(VOCABULARY)] for i in range(SEARCH_WORDS))
    searches = 0
    victim_headers = {"Authorization": f"Bearer {victim_raw}"}
    async with httpx2.AsyncClient(headers=victim_headers, timeout=120) as http:
        victim = Client(streamable_http_client(mcp_url, http_client=http))
        async with victim:
            await _victim_samples(victim, 5)()  # warm
            alone = await _victim_samples(victim, VICTIM_CALLS)()
            done = anyio.Event()

            async def search_until_done() -> None:
                nonlocal searches
                headers = {"Authorization": f"Bearer {busy_raw}"}
                async with httpx2.AsyncClient(headers=headers, timeout=120) as busy_http:
                    client = Client(streamable_http_client(mcp_url, http_client=busy_http))
                    async with client:
                        while not done.is_set():
                            arguments = {"agent": "searched", "query": query}
                            result = await client.call_tool("memory_search", arguments)
                            assert not result.is_error
                            searches += 1

            async with anyio.create_task_group() as group:
                for _ in range(BUSY_CLIENTS):
                    group.start_soon(search_until_done)
                await anyio.sleep(1.0)  # all of them under way
                beside = await _victim_samples(victim, VICTIM_CALLS)()
                done.set()
    return alone, beside, searches


def run(median_ms: Callable[..., float], report: Callable[..., None]) -> None:
    team = Team.objects.create(slug=f"bench-mcp-{_RUN}", name="Bench MCP")
    _token, raw = ApiToken.objects.issue(team, name="bench")
    store.write(team, "must.bench", "Read me by name every session. " * 30)
    store.write(team, "root", "Start here. " * 20)
    busy_team = Team.objects.create(slug=f"bench-mcp-busy-{_RUN}", name="Bench MCP busy")
    _busy_token, busy_raw = ApiToken.objects.issue(busy_team, name="bench")
    _fill_searchable(_agent(busy_team, "searched").pk, MEMORIES)
    connections.close_all()  # the servers are other processes on the same database
    os.environ.setdefault("DEBUG", "1")
    log = Path(tempfile.mkdtemp(prefix="lens-mcp-bench-")) / "mcp.log"
    port = _free_port()
    mcp_process, mcp_url = _serve_mcp(log)
    api_process = _serve_api(port)
    try:
        api_samples, mcp_samples = anyio.run(_measure, f"http://127.0.0.1:{port}", mcp_url, raw)
        alone, beside, searches = anyio.run(_busy_neighbours, mcp_url, raw, busy_raw)
    finally:
        for process in (mcp_process, api_process):
            process.terminate()
            process.wait(timeout=10)
    api_p50, mcp_p50 = statistics.median(api_samples), statistics.median(mcp_samples)
    count = ROUNDS * PER_ROUND
    print(f"\nkv_store read over HTTP, uvicorn on loopback, {count} calls each, interleaved")
    report("GET /api/kv/{key} p50 (client-side)", api_p50)
    report("MCP kv_store read (streamable HTTP) p50 (client-side)", mcp_p50)
    report("MCP / API", mcp_p50 / api_p50, unit="×")
    print(
        f"  fastest: API {min(api_samples):.2f} ms, MCP {min(mcp_samples):.2f} ms;"
        f" p90: API {statistics.quantiles(api_samples, n=10)[-1]:.2f} ms,"
        f" MCP {statistics.quantiles(mcp_samples, n=10)[-1]:.2f} ms"
    )

    alone_p50, beside_p50 = statistics.median(alone), statistics.median(beside)
    print(
        f"\nkv_bootstrap of one team through MCP, {VICTIM_CALLS} calls, alone and beside"
        f" {BUSY_CLIENTS} clients of another team running {SEARCH_WORDS}-word memory_search"
        f" over {MEMORIES:,} memories ({searches} searches meanwhile)"
    )
    report("victim kv_bootstrap p50, alone", alone_p50)
    report(f"victim kv_bootstrap p50, beside {BUSY_CLIENTS} busy clients", beside_p50)
    report("beside / alone", beside_p50 / alone_p50, unit="×")


def cleanup() -> None:
    Team.objects.filter(slug__in=[f"bench-mcp-{_RUN}", f"bench-mcp-busy-{_RUN}"]).delete()
