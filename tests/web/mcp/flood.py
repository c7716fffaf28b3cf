"""Floods an MCP HTTP server with requests whose bearer tokens were never issued, from
threads of a process of its own (so it takes no time from the test's own client):
``python -m tests.web.mcp.flood URL SECONDS THREADS``. Prints how many it sent and how many
were answered 401 (every one should be)."""

from __future__ import annotations

import json
import secrets
import sys
import threading
import time
import urllib.error
import urllib.request

BODY = json.dumps(
    {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "kv_bootstrap"}}
).encode()
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def _flood(url: str, until: float, counts: list[int], lock: threading.Lock) -> None:
    sent = refused = 0
    while time.monotonic() < until:
        # Well-formed but never issued, so each one costs the server a real lookup.
        headers = {**HEADERS, "Authorization": f"Bearer cl_{secrets.token_urlsafe(32)}"}
        request = urllib.request.Request(url, data=BODY, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                response.read()
        except urllib.error.HTTPError as exc:
            refused += exc.code == 401
        sent += 1
    with lock:
        counts[0] += sent
        counts[1] += refused


def main(url: str, seconds: float, threads: int) -> None:
    until = time.monotonic() + seconds
    counts, lock = [0, 0], threading.Lock()
    workers = [
        threading.Thread(target=_flood, args=(url, until, counts, lock)) for _ in range(threads)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    print(json.dumps({"sent": counts[0], "refused": counts[1]}))


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]), int(sys.argv[3]))
