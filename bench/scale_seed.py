"""Growing one team for ``make bench-scale`` (``bench/scale.py``): 1×, 10× and 100× of
its agents, one agent's memories and deliveries, and the team's audit log, loaded in
bulk so the largest size is seeded in minutes.

What the operations themselves write (agents through ``store_agent``, one real
delivery per size) goes through them; the rest is bulk-inserted rows shaped as those
operations shape them (``bench.memory_bench._fill``, ``bench.delivery_bench._copies``).
The audit events are chained as ``lens.audit.append`` chains them: each sealed with
``lens.audit.seal`` over ``lens.audit.event_data``, the very function ``verify_audit``
checks them with, and the chain head moved to the last.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from bench.data import big_memory_config
from bench.delivery_bench import _copies
from bench.memory_bench import _agent, _fill
from bench.search_bench import VOCABULARY
from lens.actors import Actor
from lens.agents import get_agent
from lens.audit import GENESIS, event_data, seal
from lens.models import Agent, ApiToken, AuditEvent, AuditHead, Team
from memory.configuring import store_agent
from memory.core.deliveries import DeliveryInput
from memory.deliveries.ledger import deliver
from memory.models import Delivery, MemoryRecord

BIG = "big"
# At 1×; each size multiplies them all.
AGENTS = 10
MEMORIES = 1_000
DELIVERIES = 10_000
AUDIT_EVENTS = 10_000
# Memories of each agent besides the measured one, so team-wide pages (the queue,
# search) see every agent's rows.
OTHER_MEMORIES = 20
STATUSES = ("approved", "pending", "declined", "rejected")
AUDIT_BATCH = 5_000
QUERY = "w7 w42"  # each word in 0.2% of the memories (bench.search_bench's query)


def worded(i: int) -> str:
    """A memory's text, with two vocabulary words a search can find (as search_bench's)."""
    return (
        f"Fact number {i} is about {VOCABULARY[i % 500]} "
        f"and {VOCABULARY[(i * 7 + 3) % 500]}, long enough to look real."
    )


@dataclass(frozen=True)
class Sizes:
    agents: int
    memories: int  # of the measured agent
    deliveries: int  # of the measured agent
    audit_events: int  # of the team

    @classmethod
    def at(cls, factor: int) -> Sizes:
        return cls(AGENTS * factor, MEMORIES * factor, DELIVERIES * factor, AUDIT_EVENTS * factor)


class Growth:
    """One team, grown in place from one size to the next."""

    def __init__(self, team: Team, token: ApiToken) -> None:
        self.team = team
        self.token = token
        store_agent(team, BIG, big_memory_config())
        self.big = get_agent(team, BIG)

    def grow_to(self, sizes: Sizes) -> None:
        self._agents(sizes.agents)
        self._memories(sizes.memories)
        self._deliveries(sizes.deliveries)
        self._audit(sizes.audit_events)

    def _agents(self, count: int) -> None:
        have = Agent.objects.filter(team=self.team).count()
        for n in range(have, count):
            other = _agent(self.team, f"agent-{n:04d}")
            _fill(other, OTHER_MEMORIES, STATUSES, content=worded)

    def _memories(self, count: int) -> None:
        have = MemoryRecord.objects.filter(agent=self.big).count()
        if count > have:
            _fill(self.big, count - have, STATUSES, first=have, content=worded)

    def _deliveries(self, count: int) -> None:
        """One delivery of the agent as it now is (through ``deliver``), then unchanged
        ones older than every delivery so far, up to ``count``."""
        agent = get_agent(self.team, BIG)
        deliver(agent, Actor.for_token(self.token), DeliveryInput(session="now", model="m"))
        have = Delivery.objects.filter(agent=agent).count()
        oldest = Delivery.objects.filter(agent=agent).order_by("delivered_at").first()
        assert oldest is not None
        if count > have:
            template = Delivery(
                composition_id=oldest.composition_id,
                delivered_at=oldest.delivered_at - timedelta(microseconds=1),
            )
            _copies(agent, template, count - have, self.token)

    def _audit(self, count: int) -> None:
        """Events appended to the team's log until it holds ``count``, chained."""
        head = AuditHead.objects.filter(team=self.team).values_list("seq", "sha256").first()
        seq, prev = head or (0, GENESIS)
        at = timezone.now()
        slugs = [BIG, *(f"agent-{n:04d}" for n in range(1, 10))]
        while seq < count:
            rows = []
            for _ in range(min(AUDIT_BATCH, count - seq)):
                seq += 1
                row = _event(self.team, seq, at + timedelta(microseconds=seq), prev, slugs)
                row.sha256 = seal(event_data(row))
                prev = row.sha256
                rows.append(row)
            with transaction.atomic():
                AuditEvent.objects.bulk_create(rows)
                AuditHead.objects.update_or_create(
                    team=self.team, defaults={"seq": seq, "sha256": prev}
                )


def _event(team: Team, seq: int, at: datetime, prev: str, slugs: list[str]) -> AuditEvent:
    """The kinds of event a busy team's log is mostly made of: deliveries, saves and
    key/value writes."""
    match seq % 3:
        case 0:
            agent: str | None = slugs[seq % len(slugs)]
            action, kind, ident = "delivery.recorded", "delivery", f"d{seq:012d}"
            details: dict[str, object] = {"composition": f"c{seq % 97}", "tokens": 1200}
        case 1:
            agent = slugs[seq % len(slugs)]
            action, kind, ident = "memory.saved", "memory", f"m{seq:012d}"
            details = {"kind": "profile", "status": "approved", "chars": 60}
        case _:
            agent = None
            action, kind, ident = "kv.written", "kv", f"k{seq % 500}"
            details = {"version": seq, "runes": 300}
    return AuditEvent(
        team=team,
        seq=seq,
        at=at,
        actor="runtime",
        action=action,
        object_type=kind,
        object_id=ident,
        agent=agent,
        details=details,
        prev_sha256=prev,
    )
