"""What queueing a webhook message costs a write, over HTTP under the production server
(SPEC §16's target: at most 10% of ``memory_save`` and of a key/value put, p50).

One scratch database holds two teams alike but for one thing: the second has an endpoint
that wants every event (on a port where nothing listens; no worker runs, so nothing is
sent during the measurement). One production server answers both, and each write
alternates between the two teams round by round, so both see the same machine noise.
SQLite, then PostgreSQL when it answers. Run: ``python -m bench.webhook_http``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.http import (
    PUT_PAYLOAD,
    ROOT,
    free_port,
    postgres_answers,
    running,
    scratch_database,
    server_env,
)
from bench.http_load import Call, Samples, load

ROUNDS = int(os.environ.get("BENCH_WEBHOOK_ROUNDS", "8"))
PER_ROUND = 150

SEED = """
import json, django; django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from lens.actors import SYSTEM
from lens.core.config import AgentConfig
from lens.models import ApiToken, Team
from memory.configuring import store_agent
from webhooks.endpoints import create_endpoint
saver = AgentConfig.model_validate({
    "name": "Saver", "routing_spec": "user-background",
    "background": {"sections": [
        {"id": "user_profile", "title": "About the User", "promotion": "auto"},
        {"id": "user_preferences", "title": "Preferences", "promotion": "guarded"},
    ]},
})
tokens = {}
for slug in ("quiet", "hooked"):
    team = Team.objects.create(slug=slug, name=slug)
    tokens[slug] = ApiToken.objects.issue(team, name="bench")[1]
    store_agent(team, "saver", saver)
create_endpoint(Team.objects.get(slug="hooked"), SYSTEM, "http://127.0.0.1:9/hook", ["*"])
print(json.dumps(tokens))
"""


@contextmanager
def server(env: dict[str, str], scratch: Path) -> Iterator[int]:
    port = free_port()
    command = [sys.executable, "-m", "lens.serving.server"]
    with running(command, port, {**env, "PORT": str(port), "WEB_CONCURRENCY": "1"}, scratch):
        yield port


def writes(token: str, tag: str) -> dict[str, Call]:
    bearer = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    put = json.dumps({"payload": PUT_PAYLOAD}).encode()

    def memory(n: int) -> bytes:
        content = f"The user mentioned fact {tag}-{n} worth keeping."
        return json.dumps({"kind": "profile", "content": content}).encode()

    return {
        "key/value put": Call(
            "PUT", f"/api/kv/bench.hooks.{tag}", bearer, lambda _n: put, (200, 201)
        ),
        "memory_save": Call("POST", "/api/agents/saver/memories", bearer, memory, (201,)),
    }


def run(kind: str, scratch: Path) -> None:
    title = "SQLite" if kind == "sqlite" else "PostgreSQL"
    with scratch_database(kind, scratch) as url:
        env = {
            **server_env(url, scratch),
            "WEBHOOKS_ALLOW_HTTP": "1",
            "WEBHOOKS_ALLOW_PRIVATE": "1",
        }
        seeded = subprocess.run(
            [sys.executable, "-c", SEED],
            cwd=ROOT,
            env={**env, "DEBUG": "1", "DJANGO_SETTINGS_MODULE": "lens.settings"},
            capture_output=True,
            text=True,
            check=True,
        )
        tokens = json.loads(seeded.stdout.strip().splitlines()[-1])
        with server(env, scratch) as port:
            for name in ("key/value put", "memory_save"):
                samples = {team: Samples() for team in tokens}
                for round_ in range(ROUNDS):
                    for team, token in tokens.items():
                        call = writes(token, f"{team}{round_}")[name]
                        samples[team].add(load(port, call, 1, PER_ROUND))
                hooked, quiet = samples["hooked"].p50, samples["quiet"].p50
                ratio = hooked / quiet
                verdict = "met" if ratio <= 1.10 else "MISSED"
                print(
                    f"{title}: {name} p50 {hooked:.2f} ms with an endpoint, {quiet:.2f} ms "
                    f"without: {ratio:.3f}× (goal ≤ 1.10×, {verdict})",
                    flush=True,
                )


def main() -> int:
    scratch = Path(tempfile.mkdtemp(prefix="lens-bench-hooks-"))
    print("Webhooks: the cost of queueing a message with a write, over HTTP")
    for kind in ["sqlite"] + (["postgresql"] if postgres_answers() else []):
        run(kind, scratch)
    return 0


if __name__ == "__main__":
    sys.exit(main())
