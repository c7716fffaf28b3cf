"""On SQLite, an erased memory's words are not in the database file afterwards, nor in
its write-ahead log (SPEC §15): ``secure_delete`` zeroes what the erasure frees, the
full-text index is merged without its terms, and the log is checkpointed and truncated.

The test database is a file (lens/settings.py), and this test commits, so it reads the
very bytes SQLite wrote.
"""

from __future__ import annotations

import contextlib
import secrets
import sqlite3
import subprocess
import time
import zlib
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection

from lens.actors import SYSTEM, Actor
from lens.models import Agent
from memory import search
from memory.deliveries.ledger import deliver
from memory.erasure import CHECKPOINT_WAIT_MS, checkpoint, erase_memory
from memory.models import StoredComposition
from memory.recall import recall
from tests.factories import remember

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif("connection.vendor != 'sqlite'", reason="SQLite's file"),
]

# zlib stream headers: no, fast, default and best compression (level 1 is what is stored).
ZLIB_HEADERS = (b"\x78\x01", b"\x78\x5e", b"\x78\x9c", b"\x78\xda")


def files() -> list[Path]:
    name = Path(str(connection.settings_dict["NAME"]))
    return [p for p in (name, Path(f"{name}-wal"), Path(f"{name}-shm")) if p.exists()]


def raw() -> bytes:
    """The files' bytes, read by another process: closing a descriptor of the database
    file in this one would drop every POSIX lock SQLite holds on it here, and the next
    process to close it would then take itself for the last one and remove the log
    under this process's open connection (a "disk I/O error" later)."""
    paths = [str(path) for path in files()]
    return subprocess.run(["cat", *paths], capture_output=True, check=True).stdout


def inflated(data: bytes) -> list[bytes]:
    """Every zlib stream that starts somewhere in ``data``, inflated as far as it goes."""
    found = []
    for header in ZLIB_HEADERS:
        start = data.find(header)
        while start != -1:
            inflater = zlib.decompressobj()
            with contextlib.suppress(zlib.error):
                found.append(inflater.decompress(data[start : start + 4_000_000], 8_000_000))
            start = data.find(header, start + 1)
    return found


def test_the_database_file_and_its_log_hold_no_trace_of_an_erased_memory(wren: Agent) -> None:
    mark = secrets.token_hex(6)
    word = f"Pellucidar{mark}"
    label = f"Hollowearth{mark}"
    tag = f"mahar{mark}"
    # Long enough to fill overflow pages of its own, and stored in a composition too.
    # Long: it fills overflow pages of its own, which the erasure frees, and every page
    # of it holds the word.
    content = (f"{word} keeps the spare key. " * 400)[:10_000]
    record_id = remember(wren, "profile", content, label=label, tags=[tag])
    for _ in range(3):
        deliver(wren, SYSTEM)
    assert search.search([wren.pk], word, None, 10, 0) == [record_id]
    assert word.encode() in raw()  # the test can see it: it is there before

    erase_memory(record_id, Actor(label="operator"), "request")

    assert Path(f"{connection.settings_dict['NAME']}-wal").stat().st_size == 0
    data = raw()
    needles = [s.encode() for s in (word, label, tag, word.casefold(), label.casefold(), mark)]
    assert [needle for needle in needles if needle in data] == []
    streams = inflated(data)
    assert streams  # the stored compositions' bodies are in there
    assert [s for s in streams for needle in needles if needle in s] == []
    for body in StoredComposition.objects.values_list("body", flat=True):
        text = zlib.decompress(bytes(body))
        assert not any(needle in text for needle in needles)
    assert search.search([wren.pk], word, None, 10, 0) == []
    assert record_id not in recall(wren, f"Where is {word}?").memory_ids


def test_a_reader_on_an_old_snapshot_delays_the_log_truncation_briefly_not_the_erasure(
    wren: Agent,
) -> None:
    name = str(connection.settings_dict["NAME"])
    record_id = remember(wren, "profile", "Eldritch Quahog keeps the keys", label="keys")
    deliver(wren, SYSTEM)
    reader = sqlite3.connect(name)
    try:
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM memory_memoryrecord").fetchone()  # a snapshot
        out, err = StringIO(), StringIO()
        started = time.perf_counter()
        call_command("erase_memory", record_id, "--reason", "request", stdout=out, stderr=err)
        assert time.perf_counter() - started < 2 * CHECKPOINT_WAIT_MS / 1000 + 2
        assert "could not be truncated now" in err.getvalue()
        assert checkpoint() is False
    finally:
        reader.close()
    assert checkpoint() is True
    assert Path(f"{name}-wal").stat().st_size == 0
    assert b"Quahog" not in raw()
