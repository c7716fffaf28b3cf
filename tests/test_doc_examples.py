"""Every ``curl`` example in docs/*.md runs against a live server, so an example that
stops working fails here.

The ```sh blocks that call curl are read from each page in order (a later block may
read what an earlier one wrote) and run one after another with ``bash -euo pipefail``
from the project's root, as a reader would paste them: ``localhost:8000`` becomes the
live server's address, ``$TOKEN`` is a token of the demo team (the API page issues its
own; the other pages assume one), ``.venv/bin/python manage.py …`` reaches the same
database as the server. Each curl is made to report its status and to fail on an error
status: an example that shows an error on purpose says so with ``# expect: NNN`` on the
line before its curl, and gets exactly that status instead of a 2xx.

The server is the production one (``python -m lens.serving.server``: Granian, one
process) with DEBUG on, in a process group of its own, over a scratch SQLite file that
is migrated and seeded with ``seed_demo``: the demo the pages describe, as ``make run``
serves it. It is SQLite even when the suite runs on PostgreSQL (the environment's
``DATABASE_URL`` is replaced): the examples are about the HTTP API, which answers alike
on both backends and is tested on each elsewhere, and a scratch file needs no database
server and no clean-up. The pages do not share data, so their order does not matter.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.serving import ROOT, Server, clean_env, free_port

pytestmark = pytest.mark.slow

DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md"))
# Where the examples say the server is.
DOC_ADDRESSES = ("localhost:8000", "127.0.0.1:8000")
FENCE = re.compile(r"^\s*(```|~~~)\s*(\S*)")
EXPECT = re.compile(r"^\s*#\s*expect:\s*(\d{3})\s*$")
# A curl that begins a command: at the start of a line, or after `|`, `;`, `&` or `(`.
CURL = re.compile(r"(?:^|(?<=[|;&(]))\s*curl(?=\s)")
# A curl command anywhere in a page's text: `curl -s …`, `curl "localhost…`, `curl $URL`.
CURL_COMMAND = re.compile(r"\bcurl\s+(-|['\"]?(https?://|localhost|127\.|\$|\[))")
# An independent count of the ```sh blocks that mention curl.
SH_BLOCK = re.compile(r"^```sh\n(.*?)^```", re.M | re.S)
# What each curl writes to its stderr after its transfer.
STATUS_MARK = "doc-example-status"
STATUS = re.compile(rf"^{STATUS_MARK} (\d{{3}})$", re.M)
REPORT_STATUS = f"--write-out '%{{stderr}}{STATUS_MARK} %{{http_code}}\\n'"
START_TIMEOUT = 60  # seconds for the server to answer /healthz
BLOCK_TIMEOUT = 60  # seconds for one block

# Migrate, seed the demo and issue a token in one process (one Django start-up, not
# three); the token is the last line of the output.
PREPARE = """
import django
from django.core.management import call_command

django.setup()
call_command("migrate", interactive=False, verbosity=0)
call_command("seed_demo")
call_command("issue_token", "demo", name="doc examples")
"""


@dataclass(frozen=True)
class Block:
    """A fenced block of a page: its language, its first line's number and its lines."""

    page: str
    language: str
    line: int
    lines: tuple[str, ...]

    @property
    def where(self) -> str:
        return f"docs/{self.page}:{self.line}"


def fenced_blocks(page: Path) -> list[Block]:
    """The fenced blocks of a markdown page, in order."""
    blocks: list[Block] = []
    opened: tuple[str, int] | None = None
    body: list[str] = []
    for number, line in enumerate(page.read_text().splitlines(), start=1):
        fence = FENCE.match(line)
        if opened is None:
            if fence:
                opened, body = (fence.group(2), number + 1), []
        elif fence and not fence.group(2):
            blocks.append(Block(page.name, opened[0], opened[1], tuple(body)))
            opened = None
        else:
            body.append(line)
    assert opened is None, f"docs/{page.name}: a fenced block is never closed"
    return blocks


def curl_ends(line: str) -> int | None:
    """Where the word ``curl`` of a command in ``line`` ends (``None``: no curl runs)."""
    found = None if line.lstrip().startswith("#") else CURL.search(line)
    return None if found is None else found.end()


def calls_curl(line: str) -> bool:
    return curl_ends(line) is not None


def curl_examples(page: Path) -> list[Block]:
    """The page's ```sh blocks that run curl, in order."""
    return [
        block
        for block in fenced_blocks(page)
        if block.language == "sh" and any(calls_curl(line) for line in block.lines)
    ]


EXAMPLES = {page.name: curl_examples(page) for page in PAGES}


@dataclass(frozen=True)
class Runnable:
    """A block as it is run, and the status each of its curls must get, in order
    (``None``: any 2xx)."""

    script: str
    statuses: tuple[int | None, ...]


def runnable(block: Block, address: str) -> Runnable:
    """The block with the server at ``address``, every curl reporting its status and
    failing on an error status, unless the line before says ``# expect: NNN``."""
    lines, statuses = [], []
    expected: int | None = None
    for line in block.lines:
        mark = EXPECT.match(line)
        if mark:
            assert expected is None, f"{block.where}: two '# expect:' lines for one curl"
            expected = int(mark.group(1))
        elif (end := curl_ends(line)) is not None:
            assert len(CURL.findall(line)) == 1, f"{block.where}: one curl a line, please"
            options = REPORT_STATUS if expected else f"{REPORT_STATUS} --fail-with-body"
            line = f"{line[:end]} {options}{line[end:]}"
            statuses.append(expected)
            expected = None
        else:
            assert expected is None, f"{block.where}: '# expect:' is not right before a curl"
        for doc_address in DOC_ADDRESSES:
            line = line.replace(doc_address, address)
        lines.append(line)
    assert expected is None, f"{block.where}: '# expect:' is not right before a curl"
    script = "\n".join(lines)
    assert ":8000" not in script, f"{block.where}: a server the test does not replace"
    return Runnable(script, tuple(statuses))


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str]]]:
    """The live server's address, and the environment the examples run in."""
    tmp = tmp_path_factory.mktemp("doc-examples")
    port = free_port()
    env = clean_env(
        DEBUG="1",
        DATABASE_URL=f"sqlite:///{tmp / 'db.sqlite3'}",
        HOST="127.0.0.1",
        PORT=str(port),
        WEB_CONCURRENCY="1",
        SERVER_THREADS="2",
        ACCESS_LOG="0",
    )
    prepared = subprocess.run(
        [sys.executable, "-c", PREPARE],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert prepared.returncode == 0, prepared.stdout + prepared.stderr
    env["TOKEN"] = prepared.stdout.splitlines()[-1]

    log = tmp / "server.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "lens.serving.server"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, stopped as one
        )
    server = Server(process, port, log)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not server.healthy():
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"the server did not come up:\n{log.read_text()}")
            time.sleep(0.1)
        yield f"127.0.0.1:{port}", env
    finally:
        server.stop()


@pytest.mark.parametrize("page", [name for name, blocks in EXAMPLES.items() if blocks])
def test_curl_examples_run(page: str, demo: tuple[str, dict[str, str]]) -> None:
    address, env = demo
    for block in EXAMPLES[page]:
        run = runnable(block, address)
        result = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", run.script],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=BLOCK_TIMEOUT,
        )
        got = [int(status) for status in STATUS.findall(result.stderr)]
        story = (
            f"{block.where}, run as:\n{run.script}\n"
            f"--- exit status {result.returncode}; HTTP statuses {got}, wanted "
            f"{[status or '2xx' for status in run.statuses]}\n"
            f"--- stdout:\n{result.stdout}\n--- stderr:\n{result.stderr}"
        )
        assert result.returncode == 0, story
        assert len(got) == len(run.statuses), story
        for status, expected in zip(got, run.statuses, strict=True):
            assert status == expected if expected else 200 <= status < 300, story


def test_every_curl_example_is_run() -> None:
    """No curl in docs/ outside a ```sh block (it would escape the test above), and no
    ```sh block with curl left out of the examples."""
    escaped = []
    for page in PAGES:
        blocks = fenced_blocks(page)
        inside = {block.line + offset for block in blocks for offset in range(len(block.lines))}
        for number, line in enumerate(page.read_text().splitlines(), start=1):
            if CURL_COMMAND.search(line) and number not in inside:
                escaped.append(f"docs/{page.name}:{number}: {line}")
        escaped += [
            f"{block.where}: a curl in a ```{block.language or '(no language)'} block"
            for block in blocks
            if block.language != "sh" and any(CURL_COMMAND.search(line) for line in block.lines)
        ]
    assert not escaped, "curl examples outside ```sh blocks:\n" + "\n".join(escaped)

    sh_with_curl = sum(
        1 for page in PAGES for body in SH_BLOCK.findall(page.read_text()) if "curl" in body
    )
    found = sum(len(blocks) for blocks in EXAMPLES.values())
    assert sh_with_curl > 0
    assert found >= sh_with_curl, f"{found} examples found, {sh_with_curl} ```sh blocks"
    for blocks in EXAMPLES.values():
        for block in blocks:
            assert runnable(block, "127.0.0.1:1").statuses, f"{block.where}: no curl runs"


def test_expected_statuses_are_marked_per_curl() -> None:
    block = Block(
        "page.md",
        "sh",
        1,
        (
            'curl -s localhost:8000/api/kv/a -H "Authorization: Bearer $TOKEN"',
            "# expect: 404",
            "ID=$(curl -s localhost:8000/api/kv/missing | jq -r .id)",
            "echo done  # curl is mentioned, not run",
        ),
    )
    run = runnable(block, "127.0.0.1:1234")
    assert run.statuses == (None, 404)
    first, mark, second, last = run.script.splitlines()
    assert first.startswith(f"curl {REPORT_STATUS} --fail-with-body -s 127.0.0.1:1234/api/kv/a")
    assert mark == "# expect: 404"
    assert second == f"ID=$(curl {REPORT_STATUS} -s 127.0.0.1:1234/api/kv/missing | jq -r .id)"
    assert last == block.lines[-1]
