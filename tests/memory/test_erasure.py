"""Erasing a memory (SPEC §15): what leaves, what stays, and the refusals that change
nothing."""

from __future__ import annotations

import hashlib
import zlib

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from lens.actors import SYSTEM, Actor
from lens.audit import verify_all
from lens.models import Agent, AuditEvent, Team
from memory import search
from memory.as_of import compose_as_of
from memory.decisions import AlreadyDecided, decide, reopen, revoke
from memory.deliveries.causes import causes_between
from memory.deliveries.fates import fates
from memory.deliveries.ledger import composition_of, deliver, delivered_prompt
from memory.erasure import (
    REASON_MAX,
    AlreadyErased,
    InvalidEraseReason,
    MemoryNotFound,
    erase_memory,
)
from memory.models import (
    CompositionMemory,
    Delivery,
    EventKind,
    MemoryEvent,
    MemoryRecord,
    Promotion,
    PromotionStatus,
    SearchDoc,
    StoredComposition,
)
from memory.queries import memory_page
from memory.recall import recall
from tests.factories import (
    Unchanged,
    composed,
    create_agent,
    drop_reason,
    event_kinds,
    memory_config,
    preference,
    promotion_of,
    remember,
)

pytestmark = pytest.mark.django_db

SECRET = "Zebulon Quetzalcoatl lives at 17 Marigold Lane"
LABEL = "Hideaway"
TAG = "quokkasecret"
WORDS = ("Zebulon", "Quetzalcoatl", "Marigold", LABEL, TAG, "hideaway")
ERASER = Actor(label="operator")


def held(text: str) -> bool:
    return any(word.casefold() in text.casefold() for word in WORDS)


def secret_memory(agent: Agent) -> str:
    return remember(agent, "profile", SECRET, label=LABEL, tags=[TAG, "kept-tag"])


def bodies() -> list[str]:
    return [
        zlib.decompress(bytes(body)).decode()
        for body in StoredComposition.objects.values_list("body", flat=True)
    ]


# --- what leaves, what stays --------------------------------------------------------------


def test_the_record_keeps_its_id_kind_and_times_and_loses_its_words(wren: Agent) -> None:
    record_id = secret_memory(wren)
    before = MemoryRecord.objects.get(pk=record_id)

    erased = erase_memory(record_id, ERASER, "  Request #42 from the user  ")

    after = MemoryRecord.objects.get(pk=record_id)
    assert (after.pk, after.kind, after.created_at, after.agent_id) == (
        before.pk,
        before.kind,
        before.created_at,
        before.agent_id,
    )
    assert (after.content, after.label, after.tags) == ("", None, [])
    assert after.content_sha256 == hashlib.sha256(SECRET.encode()).hexdigest()
    assert after.content_sha256 == erased.content_sha256
    assert (after.erased_by, after.erase_reason) == ("operator", "Request #42 from the user")
    assert after.erased_at == erased.at
    assert str(after) == "profile: [erased]"


def test_the_hash_it_keeps_is_the_one_its_save_logged(wren: Agent) -> None:
    record_id = secret_memory(wren)
    erase_memory(record_id, ERASER, "request")
    saved = AuditEvent.objects.get(action="memory.saved", object_id=record_id)
    assert saved.details["content_sha256"] == MemoryRecord.objects.get(pk=record_id).content_sha256


def test_it_leaves_the_prompt_with_drop_reason_erased_and_frees_its_address(wren: Agent) -> None:
    record_id = secret_memory(wren)
    assert drop_reason(wren, record_id) is None  # composed

    erase_memory(record_id, ERASER, "request")

    assert drop_reason(wren, record_id) == "erased"
    promotion = promotion_of(record_id)
    assert promotion.status == PromotionStatus.ERASED
    assert (promotion.key, promotion.placement_key) == (None, None)
    assert not held(composed(wren).model_dump_json())
    # The address its label held is free: the same label saves, no conflict.
    again = remember(wren, "profile", "Somewhere else", label=LABEL)
    assert drop_reason(wren, again) is None


def test_erased_comes_before_superseded(wren: Agent) -> None:
    old = secret_memory(wren)
    remember(wren, "profile", "Newer", label=LABEL, supersedes=old)
    assert drop_reason(wren, old) == "superseded"
    erase_memory(old, ERASER, "request")
    assert drop_reason(wren, old) == "erased"
    # Superseding it again leaves it erased.
    remember(wren, "profile", "Newest", label="other", supersedes=old)
    assert promotion_of(old).status == PromotionStatus.ERASED
    assert drop_reason(wren, old) == "erased"


def test_a_pending_memory_leaves_the_queue_and_can_no_longer_be_decided(
    wren: Agent, reviewer: User
) -> None:
    record_id = preference(wren, SECRET, label=LABEL)
    erase_memory(record_id, ERASER, "request")
    decider = Actor.for_user(reviewer)
    result = decide(record_id, True, decider)
    assert isinstance(result, AlreadyDecided)
    assert "erased" in result.notice
    assert isinstance(revoke(record_id, decider), AlreadyDecided)
    assert isinstance(reopen(record_id, decider), AlreadyDecided)
    assert promotion_of(record_id).status == PromotionStatus.ERASED
    assert not Promotion.objects.filter(status=PromotionStatus.PENDING).exists()


def test_reviewers_notes_on_it_are_kept_as_their_lengths(wren: Agent, reviewer: User) -> None:
    record_id = preference(wren, SECRET, label=LABEL)
    note = "Zebulon asked us to forget Marigold Lane"
    decide(record_id, False, Actor.for_user(reviewer), note)
    erase_memory(record_id, ERASER, "request")
    rejected = MemoryEvent.objects.get(record_id=record_id, kind=EventKind.REJECTED)
    assert rejected.detail == {"note_chars": len(note)}
    assert promotion_of(record_id).decision_note == ""
    declined = remember(wren, "fact", SECRET)  # a declined event's reason is a code: kept
    erase_memory(declined, ERASER, "request")
    event = MemoryEvent.objects.get(record_id=declined, kind=EventKind.DECLINED)
    assert event.detail == {"reason": "spec-declined"}


def test_search_and_recall_find_nothing_of_it(wren: Agent) -> None:
    record_id = secret_memory(wren)
    assert search.search([wren.pk], "quetzalcoatl", None, 10, 0) == [record_id]
    erase_memory(record_id, ERASER, "request")
    for word in ("quetzalcoatl", "hideaway", TAG, "kept", "tag", "zebulon marigold"):
        assert search.search([wren.pk], word, None, 10, 0) == []
    assert SearchDoc.objects.get(record_id=record_id).terms == ""
    assert search.index_health()[0] == search.index_health()[1]
    found = recall(wren, "Where does Zebulon Quetzalcoatl live? Hideaway")
    assert record_id not in found.memory_ids
    assert not held(found.text)
    page = memory_page(wren, None, 50, 0)
    assert record_id not in [view.id for view in page.memories]
    assert page.skipped == 0


@pytest.mark.skipif("connection.vendor != 'sqlite'")
def test_the_full_text_index_keeps_no_term_of_it(wren: Agent) -> None:
    record_id = secret_memory(wren)
    erase_memory(record_id, ERASER, "request")
    with connection.cursor() as cursor:
        cursor.execute("CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, memory_fts, row)")
        cursor.execute("SELECT term FROM temp.vocab")
        terms = {row[0] for row in cursor.fetchall()}
        cursor.execute("DROP TABLE temp.vocab")
    assert not {"zebulon", "quetzalcoatl", "marigold", "hideaway", TAG} & terms


# --- stored compositions and deliveries ------------------------------------------------


def test_every_delivered_prompt_that_held_it_reads_erased_and_keeps_its_hash(
    wren: Agent,
) -> None:
    record_id = secret_memory(wren)
    kept = remember(wren, "profile", "Likes green tea", label="drink")
    first = [deliver(wren, SYSTEM).delivery for _ in range(3)]
    remember(wren, "profile", "Has a cat", label="pet")
    second = [deliver(wren, SYSTEM).delivery for _ in range(2)]
    deliveries = first + second
    hashes = {d.pk: d.composition.prompt_sha256 for d in deliveries}
    prompts = {d.pk: delivered_prompt(d) for d in deliveries}
    assert all(held(text) for text in prompts.values())

    erased = erase_memory(record_id, ERASER, "request")

    assert (erased.compositions, erased.deliveries) == (2, 5)
    for delivery in Delivery.objects.filter(pk__in=hashes).select_related("composition"):
        stored = delivery.composition
        assert stored.prompt_sha256 == hashes[delivery.pk]
        assert stored.redacted_at == erased.at
        text = delivered_prompt(delivery)
        assert not held(text)
        before = prompts[delivery.pk].split("\n")
        after = text.split("\n")
        assert len(after) == len(before)
        changed = [(b, a) for b, a in zip(before, after, strict=True) if a != b]
        assert [a for _b, a in changed] == ["[erased]"]
        assert changed[0][0] == f"- **hideaway**: {SECRET}"
        composition = composition_of(stored)
        fragment = next(
            f for s in composition.prompt.sections for f in s.fragments if record_id in f.memory_ids
        )
        assert fragment.text == "[erased]\n"
        entries = [e for s in composition.background.sections for e in s.entries]
        assert all(record_id not in e.memory_ids for e in entries)
        assert any(kept in e.memory_ids for e in entries)
    assert not any(held(body) for body in bodies())
    # "Which deliveries did it shape" still answers.
    assert CompositionMemory.objects.filter(memory_id=record_id).count() == 2


def test_a_composition_it_was_not_in_is_left_alone(wren: Agent) -> None:
    deliver(wren, SYSTEM)
    untouched = StoredComposition.objects.get()
    record_id = secret_memory(wren)
    deliver(wren, SYSTEM)
    erase_memory(record_id, ERASER, "request")
    again = StoredComposition.objects.get(pk=untouched.pk)
    assert (bytes(again.body), again.redacted_at) == (bytes(untouched.body), None)


def test_later_deliveries_compose_without_it(wren: Agent) -> None:
    record_id = secret_memory(wren)
    erase_memory(record_id, ERASER, "request")
    delivered = deliver(wren, SYSTEM)
    assert not held(delivered.composition_json)
    assert delivered.delivery.composition.redacted_at is None
    assert record_id not in delivered.delivery.composition.memory_ids.split()


# --- the story it leaves --------------------------------------------------------------------


def test_an_erased_event_and_its_audit_event_hold_no_text(wren: Agent) -> None:
    record_id = secret_memory(wren)
    deliver(wren, SYSTEM)
    reason = "The user asked: ticket 7"
    erase_memory(record_id, ERASER, reason)
    assert event_kinds(record_id)[-1] == EventKind.ERASED
    audit = AuditEvent.objects.get(action="memory.erased")
    assert (audit.object_type, audit.object_id, audit.agent, audit.actor) == (
        "memory",
        record_id,
        "wren",
        "operator",
    )
    assert audit.details == {
        "content_sha256": hashlib.sha256(SECRET.encode()).hexdigest(),
        "reason": reason,
        "compositions": 1,
        "deliveries": 1,
    }
    assert not any(held(str(row)) for row in AuditEvent.objects.values())
    assert all(found.first_bad is None for found in verify_all(None))


def test_the_delivery_diff_lists_the_erasure_among_its_causes(wren: Agent) -> None:
    record_id = secret_memory(wren)
    before = deliver(wren, SYSTEM).delivery
    erase_memory(record_id, ERASER, "request")
    after = deliver(wren, SYSTEM).delivery
    causes = causes_between(before, after).items
    assert [(c["memory_id"], c["event"], c["actor"]) for c in causes] == [
        (record_id, "erased", "operator")
    ]


def test_a_delivered_memory_reads_erased_since(wren: Agent) -> None:
    record_id = secret_memory(wren)
    erase_memory(record_id, ERASER, "request")
    fate = fates([record_id], frozenset())[record_id]
    assert (fate.state, fate.by, fate.words) == ("erased", "operator", "erased by operator")


def test_as_of_any_moment_it_is_dropped_as_erased(wren: Agent) -> None:
    record_id = secret_memory(wren)
    delivered = deliver(wren, SYSTEM).delivery
    erase_memory(record_id, ERASER, "request")
    for moment in (delivered.delivered_at, timezone.now()):
        past = compose_as_of(wren, moment)
        assert {d.memory_id: d.reason for d in past.report.drops}[record_id] == "erased"
        assert not held(past.model_dump_json())
        assert "[erased]" not in past.prompt.text  # dropped, not a line of its own


# --- refusals change nothing --------------------------------------------------------------


def test_erasing_it_twice_is_refused_and_changes_nothing(wren: Agent) -> None:
    record_id = secret_memory(wren)
    deliver(wren, SYSTEM)
    erase_memory(record_id, ERASER, "request")
    unchanged = Unchanged()
    with pytest.raises(AlreadyErased) as refused:
        erase_memory(record_id, Actor(label="someone else"), "again")
    assert refused.value.code == "already_erased"
    assert "already erased by operator" in refused.value.message
    unchanged.check()


@pytest.mark.parametrize("record_id", ["0000000000000000zz", "NOT-AN-ID", "", "a" * 33])
def test_an_unknown_memory_is_not_found(wren: Agent, record_id: str) -> None:
    secret_memory(wren)
    unchanged = Unchanged()
    with pytest.raises(MemoryNotFound) as refused:
        erase_memory(record_id, ERASER, "request")
    assert refused.value.code == "memory_not_found"
    unchanged.check()


def test_another_teams_memory_is_not_found_in_this_team(
    wren: Agent, team: Team, other_team: Team
) -> None:
    record_id = secret_memory(wren)
    with pytest.raises(MemoryNotFound):
        erase_memory(record_id, ERASER, "request", team=other_team)
    assert MemoryRecord.objects.get(pk=record_id).content == SECRET
    erase_memory(record_id, ERASER, "request", team=team)


@pytest.mark.parametrize(
    "reason",
    ["", "   ", "x" * (REASON_MAX + 1), "line\nbreak", "tab\there", "nul\x00", "lone \ud800"],
)
def test_a_missing_long_or_unprintable_reason_is_refused(wren: Agent, reason: str) -> None:
    record_id = secret_memory(wren)
    unchanged = Unchanged()
    with pytest.raises(InvalidEraseReason) as refused:
        erase_memory(record_id, ERASER, reason)
    assert refused.value.code == "invalid_erase_reason"
    unchanged.check()


@pytest.mark.parametrize("reason", ["x" * REASON_MAX, "Zgłoszenie №7 — usuń 🙏", "RTL עברית"])
def test_a_reason_of_up_to_the_limit_in_any_script_is_kept(wren: Agent, reason: str) -> None:
    record_id = secret_memory(wren)
    erase_memory(record_id, ERASER, reason)
    assert MemoryRecord.objects.get(pk=record_id).erase_reason == reason


def test_a_memory_of_another_agent_is_untouched(team: Team, wren: Agent) -> None:
    other = create_agent(team, "robin", memory_config(name="Robin"))
    theirs = remember(other, "profile", SECRET, label=LABEL)
    deliver(other, SYSTEM)
    mine = secret_memory(wren)
    erase_memory(mine, ERASER, "request")
    assert MemoryRecord.objects.get(pk=theirs).content == SECRET
    assert drop_reason(other, theirs) is None
    assert StoredComposition.objects.get(agent=other).redacted_at is None


def test_each_stored_composition_is_rewritten_once_however_many_deliveries_share_it(
    wren: Agent,
) -> None:
    record_id = secret_memory(wren)
    for i in range(12):
        remember(wren, "fact", f"Recall-only fact {i}")  # a new composition each time
        for _ in range(5):
            deliver(wren, SYSTEM)
    assert StoredComposition.objects.count() == 12
    with CaptureQueriesContext(connection) as queries:
        erased = erase_memory(record_id, ERASER, "request")
    assert (erased.compositions, erased.deliveries) == (12, 60)
    rewrites = [q["sql"] for q in queries if q["sql"].startswith('UPDATE "memory_composition"')]
    assert len(rewrites) == 12
    # Beside the rewrites, a fixed number of statements, whatever the deliveries.
    assert len(queries) - len(rewrites) <= 20
    assert not any(held(body) for body in bodies())
