"""Deliveries racing an erasure of one of their memories (SPEC §15): whichever commits
first, no stored composition holds the erased words afterwards — a delivery either
composed before the erasure (and is redacted by it) or after (and never held them).
"""

from __future__ import annotations

import zlib

import pytest

from lens.actors import SYSTEM, Actor
from lens.models import Agent, AuditEvent
from memory.composed import current, stamped_agent
from memory.deliveries.ledger import deliver
from memory.erasure import AlreadyErased, erase_memory
from memory.models import Delivery, EventKind, MemoryEvent, StoredComposition
from tests.factories import race, remember

pytestmark = pytest.mark.django_db(transaction=True)

RUNTIMES = 6
ROUNDS = 4


def test_deliveries_racing_an_erasure_never_keep_its_words(wren: Agent) -> None:
    for round_ in range(ROUNDS):
        secret = f"Wolfram Nightjar {round_} keeps the keys"
        record_id = remember(wren, "profile", secret, label=f"keys{round_}")
        # A composition that holds it already, and one with another memory each round,
        # so racing deliveries store new compositions too.
        deliver(wren, SYSTEM)
        remember(wren, "profile", f"Round {round_}", label=f"round{round_}")

        def act(n: int, record_id: str = record_id) -> object:
            if n == 0:
                return erase_memory(record_id, Actor(label="operator"), "request")
            return deliver(wren, SYSTEM).delivery.pk

        answers = race(RUNTIMES, act)
        assert len(set(answers[1:])) == RUNTIMES - 1
        for body in StoredComposition.objects.values_list("body", flat=True):
            assert b"Nightjar" not in zlib.decompress(bytes(body))
    assert Delivery.objects.count() == ROUNDS * RUNTIMES


def test_two_erasures_of_one_memory_at_once_erase_it_once(wren: Agent) -> None:
    record_id = remember(wren, "profile", "Wolfram Nightjar keeps the keys", label="keys")
    deliver(wren, SYSTEM)

    def erase(n: int) -> str:
        try:
            erase_memory(record_id, Actor(label=f"reviewer {n}"), f"request {n}")
        except AlreadyErased:
            return "refused"
        return "erased"

    assert sorted(race(2, erase)) == ["erased", "refused"]
    assert MemoryEvent.objects.filter(record_id=record_id, kind=EventKind.ERASED).count() == 1
    assert AuditEvent.objects.filter(action="memory.erased").count() == 1


def test_an_erasure_between_the_agents_read_and_the_delivery_is_seen(wren: Agent) -> None:
    # The route reads the agent with its stamp before the delivery's transaction, and a
    # composition kept for that stamp is delivered without composing again: the stamp
    # is read again once the erasure lock is held, so an erasure that committed in
    # between is composed away, not delivered and stored.
    record_id = remember(wren, "profile", "Wolfram Nightjar keeps the keys", label="keys")
    deliver(wren, SYSTEM)
    read_before = stamped_agent(wren.team, wren.slug, revision=True)
    current(read_before)  # kept for the stamp it was read with
    erase_memory(record_id, Actor(label="operator"), "request")
    delivered = deliver(read_before, SYSTEM)
    assert "Nightjar" not in delivered.composition_json
    stored = delivered.delivery.composition
    assert b"Nightjar" not in zlib.decompress(
        bytes(StoredComposition.objects.get(pk=stored.pk).body)
    )
