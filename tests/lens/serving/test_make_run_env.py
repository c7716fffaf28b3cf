"""``make run`` lets the demo's webhooks reach a receiver on this machine
(``WEBHOOKS_ALLOW_HTTP`` and ``WEBHOOKS_ALLOW_PRIVATE``); ``make serve`` never does.

Read from make itself, without installing or serving anything: a probe target is made a
prerequisite of each (target-specific variables reach prerequisites), and ``-n`` prints
every other recipe instead of running it, while the probe's ``+`` line runs.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.serving import ROOT, clean_env

PROBE = """\
run serve: probe-env
probe-env:
\t+@echo "probe: http=$$WEBHOOKS_ALLOW_HTTP private=$$WEBHOOKS_ALLOW_PRIVATE"
"""


def flags_under(target: str, tmp_path: Path) -> str:
    probe = tmp_path / "probe.mk"
    probe.write_text(PROBE)
    env = clean_env()
    for name in ("WEBHOOKS_ALLOW_HTTP", "WEBHOOKS_ALLOW_PRIVATE"):
        env.pop(name, None)
    done = subprocess.run(
        ["make", "-n", "-f", "Makefile", "-f", str(probe), target],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    [line] = [line for line in done.stdout.splitlines() if line.startswith("probe: ")]
    return line


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_run_allows_local_webhook_receivers_and_serve_does_not(tmp_path: Path) -> None:
    assert flags_under("run", tmp_path) == "probe: http=1 private=1"
    assert flags_under("serve", tmp_path) == "probe: http= private="
