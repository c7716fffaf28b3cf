"""Two app servers over one PostgreSQL act as one system (docs/scaling.md).

Two real ``make serve`` processes — each with its own server processes, its own
connection pool and its own webhook worker, as on two machines behind a load balancer —
share one scratch database and the same ``SECRET_KEY``. Clients drive both at once over
real HTTP, and the test checks what only the database can hold together:

- key/value compare-and-set (SPEC §7): exactly one winner per version, no lost update;
- the memory collision gate (SPEC §5.1): of saves to one address, one is admitted;
- the audit log (SPEC §15): one gapless chain per team, and ``verify_audit`` passes;
- webhooks (SPEC §16): with a worker beside each server, each event is sent once.

PostgreSQL only: SQLite is one file on one machine, where more capacity means more
server processes beside it, not a second instance (docs/scaling.md).
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tests.factories import memory_config
from tests.serving import (
    ON_POSTGRESQL,
    Server,
    clean_env,
    manage,
    run_python,
    scratch_database,
    start_serve,
    strong_key,
)
from tests.webhooks.receiver import Receiver, receiving

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not ON_POSTGRESQL,
        reason="two instances share one PostgreSQL; SQLite is one file on one machine "
        "(scale it with more server processes there), so this runs on PostgreSQL only",
    ),
]

TEAMS = ("acme", "globex")
# The webhooks each team's endpoints ask for: events whose number the audit log tells.
SUBSCRIBED = ["kv.written", "memory.saved", "delivery.recorded"]
ENDPOINTS_PER_TEAM = 2

SETUP = """
import django; django.setup()
from lens.models import ApiToken, Team
for slug in {teams!r}:
    team = Team.objects.create(slug=slug, name=slug.title())
    print(ApiToken.objects.issue(team)[1])
"""

T = TypeVar("T")


class Api:
    """One client's kept-alive connection to one instance, with one team's token."""

    def __init__(self, port: int, token: str) -> None:
        self.port = port
        self.token = token
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        headers = {"Host": "127.0.0.1", "Authorization": f"Bearer {self.token}"}
        data = None if body is None else json.dumps(body)
        if data is not None:
            headers["Content-Type"] = "application/json"
        for attempt in (1, 2):
            try:
                self.connection.request(method, path, body=data, headers=headers)
                response = self.connection.getresponse()
                payload = response.read()
                break
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                # The server closed a kept-alive connection between requests (before it
                # read this one): a new connection, once.
                self.connection.close()
                if attempt == 2:
                    raise
        return response.status, json.loads(payload) if payload else None

    def close(self) -> None:
        self.connection.close()


@dataclass
class Cluster:
    env: dict[str, str]
    servers: list[Server]
    tokens: dict[str, str]  # team slug -> raw token
    receiver: Receiver

    def api(self, instance: int, team: str = "acme") -> Api:
        return Api(self.servers[instance % len(self.servers)].port, self.tokens[team])


def at_once(n: int, fn: Callable[[int], T]) -> list[T]:
    """``fn(0)`` … ``fn(n - 1)`` in threads released together; their answers, in order."""
    barrier = threading.Barrier(n)

    def run(i: int) -> T:
        barrier.wait(timeout=30)
        return fn(i)

    with ThreadPoolExecutor(n) as pool:
        return list(pool.map(run, range(n)))


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    tmp = tmp_path
    with scratch_database(tmp, "lens_two") as url, receiving() as receiver:
        shared = clean_env(
            SECRET_KEY=strong_key(),  # the same on every instance: sessions, CSRF
            ALLOWED_HOSTS="127.0.0.1",
            DATABASE_URL=url,
            # One server process (of two threads) per instance keeps the 2-core machine
            # from thrashing; the two instances still answer at the same time.
            WEB_CONCURRENCY="1",
            ACCESS_LOG="0",
            WEBHOOKS_ALLOW_HTTP="1",
            WEBHOOKS_ALLOW_PRIVATE="1",
        )
        shared.pop("DJANGO_SETTINGS_MODULE")
        # Migrations once, from one place, before any instance starts (each instance's
        # own `migrate` then finds nothing to do).
        manage({**shared, "DEBUG": "1"}, "migrate", "--no-input", "-v0")
        done = run_python(SETUP.format(teams=TEAMS), DATABASE_URL=url, DEBUG="1")
        assert done.returncode == 0, done.stderr
        tokens = dict(zip(TEAMS, done.stdout.split(), strict=True))
        # Per instance: its own static files directory, as on its own machine.
        envs = [{**shared, "STATIC_ROOT": str(tmp / f"static{n}")} for n in range(2)]
        with ThreadPoolExecutor(2) as pool:
            started = [
                pool.submit(start_serve, env, tmp / f"serve{n}.log") for n, env in enumerate(envs)
            ]
        servers = [future.result() for future in started if future.exception() is None]
        try:
            for future in started:
                future.result()  # an instance that did not come up fails the test here
            yield Cluster(shared, servers, tokens, receiver)
        finally:
            with ThreadPoolExecutor(2) as pool:
                list(pool.map(Server.stop, servers))


def create_agents(cluster: Cluster) -> None:
    """Each team's agent ``wren`` (routed by ``user-background``) and its endpoints,
    created through the first instance."""
    for team in TEAMS:
        api = cluster.api(0, team)
        status, body = api.call("PUT", "/api/agents/wren", memory_config())
        assert status == 201, body
        for n in range(ENDPOINTS_PER_TEAM):
            url = f"{cluster.receiver.url}/{team}/{n}"
            status, body = api.call("POST", "/api/webhooks", {"url": url, "events": SUBSCRIBED})
            assert status == 201, body
        api.close()


def test_two_instances_over_one_postgresql_act_as_one_system(cluster: Cluster) -> None:
    create_agents(cluster)
    compare_and_set_has_one_winner_per_version(cluster)
    the_collision_gate_admits_one_save_per_address(cluster)
    concurrent_changes_leave_one_chain_per_team(cluster)
    each_event_is_sent_once(cluster)


# --- (a) key/value compare-and-set ---------------------------------------------------


def compare_and_set_has_one_winner_per_version(cluster: Cluster) -> None:
    # Creation with if_version 0, from both instances at once: one creates it.
    created = at_once(2, lambda i: cluster.api(i).call("PUT", "/api/kv/counter", _cas(0, 0)))
    assert sorted(status for status, _ in created) == [201, 409]
    conflict = next(body for status, body in created if status == 409)
    assert conflict["error"]["code"] == "version_conflict"
    assert conflict["error"]["current_version"] == 1

    # Each round, one writer on each instance asks for the same version: one lands.
    def put_round(version: int, i: int) -> tuple[int, Any]:
        return cluster.api(i).call("PUT", "/api/kv/round", _cas(version - 1, version * 10 + i))

    for version in range(1, 11):
        answers = at_once(2, partial(put_round, version))
        statuses = sorted(status for status, _ in answers)
        assert statuses == [200 if version > 1 else 201, 409], answers
        winner = next(body for status, body in answers if status < 300)
        loser = next(body for status, body in answers if status == 409)
        assert winner["version"] == version
        assert loser["error"]["current_version"] == version

    # A counter incremented by read-then-CAS from 8 clients, 4 on each instance: every
    # acknowledged increment is in the final value (no lost update), and each version
    # was won exactly once.
    clients, wins_each = 8, 4

    def increment(n: int) -> list[int]:
        api = cluster.api(n)
        won: list[int] = []
        conflicts = 0
        while len(won) < wins_each:
            status, body = api.call("GET", "/api/kv/counter")
            assert status == 200, body
            current, value = body["version"], int(body["payload"])
            status, body = api.call("PUT", "/api/kv/counter", _cas(current, value + 1))
            if status == 200:
                assert body["version"] == current + 1
                won.append(body["version"])
            else:
                assert status == 409, body
                assert body["error"]["current_version"] > current
                conflicts += 1
                assert conflicts < 500, "a client never got its turn"
        api.close()
        return won

    won = [version for versions in at_once(clients, increment) for version in versions]
    total = clients * wins_each
    assert sorted(won) == list(range(2, total + 2))  # one winner per version, no gaps
    status, body = cluster.api(1).call("GET", "/api/kv/counter")
    assert (status, body["version"], body["payload"]) == (200, total + 1, str(total))
    status, body = cluster.api(0).call("GET", "/api/kv/counter/history?limit=1")
    assert body["total_versions"] == total + 1


def _cas(if_version: int, value: int) -> dict[str, Any]:
    return {"payload": str(value), "if_version": if_version}


# --- (b) the collision gate ------------------------------------------------------------


def the_collision_gate_admits_one_save_per_address(cluster: Cluster) -> None:
    addresses, racers = 8, 4  # two racers on each instance per address

    def save(label: str, i: int, **extra: Any) -> tuple[int, Any]:
        body = {"kind": "preference", "content": f"{label} as said by client {i}", "label": label}
        return cluster.api(i).call("POST", "/api/agents/wren/memories", {**body, **extra})

    holders: dict[str, str] = {}
    for n in range(addresses):
        label = f"Gate {n}"
        answers = at_once(racers, partial(save, label))
        saved = [body for status, body in answers if status == 201]
        conflicts = [body for status, body in answers if status == 409]
        assert len(saved) == 1, answers
        assert len(conflicts) == racers - 1, answers
        holders[label] = saved[0]["id"]
        for body in conflicts:
            assert body["status"] == "conflict"
            assert body["existing"]["id"] == holders[label]

    # Saves that supersede the same holder, one on each instance: one replaces it; the
    # other then finds the new holder and conflicts (SPEC §5.1).
    for label, holder in list(holders.items())[:4]:
        answers = at_once(2, partial(save, label, supersedes=holder))
        assert sorted(status for status, _ in answers) == [201, 409], answers
        new = next(body["id"] for status, body in answers if status == 201)
        conflict = next(body for status, body in answers if status == 409)
        assert conflict["existing"]["id"] == new

    status, body = cluster.api(1).call("GET", "/api/agents/wren/memories?kind=preference&limit=200")
    assert status == 200
    assert len(body["memories"]) == addresses + 4


# --- (c) the audit log -----------------------------------------------------------------


def concurrent_changes_leave_one_chain_per_team(cluster: Cluster) -> None:
    # 8 clients, each on one instance and one team (all four pairs), each making a mix
    # of changes that append from different code paths.
    clients, rounds = 8, 6

    def work(n: int) -> Counter[str]:
        team = TEAMS[(n // 2) % 2]
        api = cluster.api(n, team)
        made: Counter[str] = Counter()
        for r in range(rounds):
            kind = (n + r) % 3
            if kind == 0:
                status, body = api.call("PUT", f"/api/kv/burst.c{n}.r{r}", {"payload": "x"})
                assert status == 201, body
                made[f"{team} kv.written"] += 1
            elif kind == 1:
                memory = {"kind": "profile", "content": f"Fact {n}.{r}", "label": f"f{n}-{r}"}
                status, body = api.call("POST", "/api/agents/wren/memories", memory)
                assert status == 201, body
                made[f"{team} memory.saved"] += 1
            else:
                status, body = api.call("POST", "/api/agents/wren/deliveries", {})
                assert status == 201, body
                made[f"{team} delivery.recorded"] += 1
        api.close()
        return made

    before = {team: actions(audit_log(cluster, team)) for team in TEAMS}
    made = sum(at_once(clients, work), Counter())
    assert sum(made.values()) == clients * rounds

    for team in TEAMS:
        events = audit_log(cluster, team)
        # One chain: numbered 1, 2, … with no gap or repeat, each sealing the one before.
        assert [event["seq"] for event in events] == list(range(1, len(events) + 1))
        previous = "0" * 64
        for event in events:
            assert event["prev_sha256"] == previous
            previous = event["sha256"]
        # Every acknowledged change has its event, in its own team's chain.
        added = actions(events) - before[team]
        assert added == Counter(
            {action: n for key, n in made.items() for t, action in [key.split()] if t == team}
        )

    out = manage({**cluster.env, "DEBUG": "1"}, "verify_audit")
    for team in TEAMS:
        assert f"team {team}\n{len(audit_log(cluster, team))} events verified" in out, out


def actions(events: list[dict[str, Any]]) -> Counter[str]:
    return Counter(event["action"] for event in events)


def audit_log(cluster: Cluster, team: str) -> list[dict[str, Any]]:
    api = cluster.api(1, team)
    events: list[dict[str, Any]] = []
    after: int | None = 0
    while after is not None:
        status, body = api.call("GET", f"/api/audit?after={after}&limit=200")
        assert status == 200, body
        events += body["events"]
        after = body["next_after"]
    api.close()
    return events


# --- (d) webhooks --------------------------------------------------------------------


def each_event_is_sent_once(cluster: Cluster) -> None:
    # Changes through both instances right before counting: the workers' last
    # messages race the last changes.
    at_once(
        4,
        lambda i: cluster.api(i, TEAMS[i % 2]).call(
            "PUT", f"/api/kv/hook.{i}", {"payload": f"v{i}"}
        ),
    )
    expected = Counter[tuple[str, int]]()
    for team in TEAMS:
        for event in audit_log(cluster, team):
            if event["action"] in SUBSCRIBED:
                for n in range(ENDPOINTS_PER_TEAM):
                    expected[(f"/hook/{team}/{n}", event["seq"])] += 1

    deadline = time.monotonic() + 30
    while len(cluster.receiver.received) < len(expected) and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(2)  # a second send of anything would arrive within this
    received = list(cluster.receiver.received)

    # A message has one webhook-id at every endpoint it goes to (a receiver drops
    # repeats by it); at each endpoint, each id arrived once.
    ids = Counter((got.path, got.headers["webhook-id"]) for got in received)
    assert [key for key, n in ids.items() if n > 1] == []
    sent = Counter((got.path, json.loads(got.body)["data"]["seq"]) for got in received)
    assert sent == expected

    # Both workers started the minute sweep at once: one waits (none for the moment
    # while it runs), never one per worker.
    waiting = run_python(
        "import django; django.setup()\n"
        "from django_tasks import TaskResultStatus\n"
        "from django_tasks_db.models import DBTaskResult\n"
        "print(DBTaskResult.objects.filter(task_path='webhooks.tasks.sweep',"
        " status=TaskResultStatus.READY).count())",
        DATABASE_URL=cluster.env["DATABASE_URL"],
        DEBUG="1",
    )
    assert waiting.stdout.strip() in ("0", "1"), waiting.stdout + waiting.stderr
