"""Portable bundles (SPEC §15): an agent exported and imported into another team or
instance keeps its ids, times, revisions, memories, decisions and deliveries, so every
delivery keeps its prompt and the live composition is the same; a bundle that is cut
short, altered, of another format or version, malformed, or whose ids are taken is
refused with the line it fails on, and nothing is written.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import subprocess
import sys
import tracemalloc
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, get_args

import pytest
from django.contrib.auth.models import User
from django.db import connection, transaction

from lens.actors import Actor
from lens.agents import get_agent
from lens.audit import Entry, append_one, event_data, seal, verify
from lens.core.config import AgentConfig
from lens.core.errors import DomainError
from lens.models import Agent, AuditEvent, Membership, Revision, Team, Via
from memory.bundles.exporting import export_bundle
from memory.bundles.importing import BundleConflict, import_bundle, verify_bundle
from memory.configuring import store_agent
from memory.core.bundle_format import InvalidBundle
from memory.core.bundle_lines import (
    SCHEMAS,
    TYPES,
    EventKindName,
    PromotionStatusName,
    PromptSectionName,
    ViaName,
)
from memory.erasure import erase_memory
from memory.migration import apply_migration, migration_plan
from memory.models import Delivery, EventKind, MemoryRecord, PromotionStatus
from memory.routing_cases import stored_cases
from tests.api_calls import ApiClient
from tests.factories import (
    Unchanged,
    agent_state,
    bundle_story,
    bundle_text,
    create_agent,
    deliver_through,
    rebundle,
    remember,
    v2_config,
)
from tests.samples import SAMPLE_CONFIG, SECTION_ORDER, V2_SPECS
from tests.serving import ROOT, clean_env

pytestmark = pytest.mark.django_db

AT = datetime(2031, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)


@pytest.fixture
def wren(team: Team, api: ApiClient, reviewer: User) -> Agent:
    bundle_story(team, api, reviewer)
    return get_agent(team, "wren")


def exported(agent: Agent, path: Path, at: datetime | None = None) -> bytes:
    bundle = export_bundle(agent, at=at)
    with path.open("wb") as out:
        bundle.write_to(out)
    return path.read_bytes()


def renamed(state: dict[str, Any], old: str, new: str) -> dict[str, Any]:
    """``state`` of an agent imported under slug ``new``: its live composition names it
    (the delivered ones keep the slug they were delivered under)."""
    composition = json.loads(state["composition"])
    assert composition["agent"] == old
    return {**state, "composition": json.dumps({**composition, "agent": new})}


def as_json(state: dict[str, Any]) -> dict[str, Any]:
    return {**state, "composition": json.loads(state["composition"])}


# --- the round trip -------------------------------------------------------------------


def test_an_agent_moves_to_another_team_under_a_new_slug_exactly(
    wren: Agent, reviewer: User, other_team: Team, tmp_path: Path
) -> None:
    before = agent_state(wren)
    assert len(before["deliveries"]) == 4
    assert len({row[6] for row in before["deliveries"]}) == 3  # two share a composition
    assert [r[3] for r in before["revisions"]] == [Via.API, Via.API, Via.ADMIN]
    path = tmp_path / "wren.bundle.jsonl.gz"
    exported(wren, path)
    wren.delete()  # the ids are this instance's keys: a move frees them first
    Membership.objects.create(team=other_team, user=reviewer)  # who decided, there too

    imported = import_bundle(path, other_team, slug="wren-copy")

    agent = imported.agent
    assert (agent.team_id, agent.slug) == (other_team.pk, "wren-copy")
    after = agent_state(agent)
    assert as_json(after) == as_json(renamed(before, "wren", "wren-copy"))
    assert imported.revision == 3
    assert not imported.recorded_revision
    # Every delivery has the prompt it was recorded with, and the composition text.
    for old, new in zip(before["deliveries"], after["deliveries"], strict=True):
        assert old[5] == new[5] == hashlib.sha256(_prompt(new[7]).encode()).hexdigest()
    # And the prompt-cache figures it was recorded with (compared whole above).
    assert all(row[9] is not None for row in after["deliveries"])
    assert any(row[11] == "Context" for row in after["deliveries"])


def _prompt(composition_text: str) -> str:
    sections = json.loads(composition_text)["prompt"]["sections"]
    return "\n\n".join("".join(f["text"] for f in s["fragments"]) for s in sections)


def test_an_import_into_another_team_keeps_the_slug_and_the_composition_byte_for_byte(
    wren: Agent, reviewer: User, other_team: Team, tmp_path: Path
) -> None:
    before = agent_state(wren)
    path = tmp_path / "wren.gz"
    exported(wren, path)
    wren.delete()
    Membership.objects.create(team=other_team, user=reviewer)
    agent = import_bundle(path, other_team).agent
    assert agent.slug == "wren"
    assert agent_state(agent) == before


def test_an_erased_memory_travels_as_its_tombstone_and_its_redacted_deliveries(
    team: Team, api: ApiClient, reviewer: User, other_team: Team, tmp_path: Path
) -> None:
    """An erasure before the export: the bundle holds none of the words, the memory
    arrives erased (who, when, why, the hash of what it held), and every delivery that
    held it keeps its ``prompt_sha256`` with ``[erased]`` where its lines were."""
    ids = bundle_story(team, api, reviewer)
    wren = get_agent(team, "wren")
    erase_memory(ids["city"], Actor.for_user(reviewer), "Asked to be forgotten.")
    before = agent_state(wren)
    path = tmp_path / "wren.gz"
    exported(wren, path)
    text = gzip.decompress(path.read_bytes()).decode()
    assert "Kraków" not in text
    assert "[erased]" in text
    wren.delete()
    Membership.objects.create(team=other_team, user=reviewer)

    agent = import_bundle(path, other_team).agent

    assert agent_state(agent) == before
    record = MemoryRecord.objects.get(pk=ids["city"])
    assert (record.content, record.label, record.tags) == ("", None, [])
    assert record.erased_at is not None
    assert record.erase_reason == "Asked to be forgotten."
    assert len(record.content_sha256) == 64
    held = Delivery.objects.filter(agent=agent, composition__redacted_at__isnull=False)
    assert held.exists()


def test_the_import_is_one_audit_event_of_the_target_team_and_replays_none(
    wren: Agent, team: Team, other_team: Team, tmp_path: Path
) -> None:
    path = tmp_path / "wren.gz"
    exported(wren, path)
    source_events = AuditEvent.objects.filter(team=team, agent="wren").count()
    assert source_events > 10
    wren.delete()
    before = AuditEvent.objects.filter(team=other_team).count()

    imported = import_bundle(path, other_team, slug="moved")

    (event,) = AuditEvent.objects.filter(team=other_team).order_by("seq")[before:]
    data = event_data(event)
    assert (data["action"], data["object"], data["agent"]) == (
        "agent.created",
        {"type": "agent", "id": "moved"},
        "moved",
    )
    counts = imported.counts
    assert counts["audit"] == source_events
    assert data["details"] == {
        "via": "import",
        "bundle_sha256": imported.manifest.sha256,
        "revision": 3,
        "config_sha256": Revision.objects.get(agent=imported.agent, number=3).config_id,
        "source_agent": "wren",
        "counts": counts,
    }
    assert data["actor"] == "system"
    assert verify(other_team).first_bad is None
    assert verify(team).first_bad is None


def test_a_bundle_whose_declarations_are_not_its_newest_revision_records_them_as_an_import(
    wren: Agent, other_team: Team, tmp_path: Path
) -> None:
    lines = bundle_text(exported(wren, tmp_path / "wren.gz"))
    agent_line = json.loads(lines[1])
    agent_line["config"]["objective"] = "Edited by hand."
    lines[1] = json.dumps(agent_line, ensure_ascii=False).encode() + b"\n"
    path = tmp_path / "edited.gz"
    path.write_bytes(rebundle(lines))
    wren.delete()
    before = AuditEvent.objects.filter(team=other_team).count()

    imported = import_bundle(path, other_team, slug="edited")

    assert imported.recorded_revision
    newest = Revision.objects.get(agent=imported.agent, number=4)
    assert (newest.via, newest.actor, newest.approved_by) == (Via.IMPORT, "system", None)
    assert newest.summary == [{"change": "field_changed", "field": "objective"}]
    assert imported.agent.objective == "Edited by hand."
    # Recorded as every change is, named by the import's one event (no second one).
    (event,) = AuditEvent.objects.filter(team=other_team).order_by("seq")[before:]
    data = event_data(event)
    assert data["action"] == "agent.created"
    assert (data["details"]["revision"], data["details"]["config_sha256"]) == (4, newest.config_id)
    assert verify(other_team).first_bad is None


def test_decisions_keep_their_reviewer_when_the_reviewer_is_a_member_of_the_target_team(
    wren: Agent, reviewer: User, other_team: Team, tmp_path: Path
) -> None:
    path = tmp_path / "wren.gz"
    exported(wren, path)
    wren.delete()
    Membership.objects.create(team=other_team, user=reviewer)
    agent = import_bundle(path, other_team).agent
    decided = MemoryRecord.objects.filter(agent=agent, promotion__decided_by=reviewer)
    assert decided.count() == 1  # tea, revoked by mira (jokes was reopened: undecided)
    assert decided.get().promotion.status == PromotionStatus.REVOKED


def test_decisions_by_someone_who_is_not_a_member_here_keep_only_their_name(
    wren: Agent, other_team: Team, tmp_path: Path
) -> None:
    path = tmp_path / "wren.gz"
    exported(wren, path)
    wren.delete()
    agent = import_bundle(path, other_team).agent
    revoked = MemoryRecord.objects.get(agent=agent, promotion__status=PromotionStatus.REVOKED)
    assert revoked.promotion.decided_by is None
    event = revoked.events.get(kind=EventKind.REVOKED)
    assert (event.actor, event.actor_user) == ("mira", None)


# --- the file ------------------------------------------------------------------------


def test_the_manifest_comes_first_and_hashes_every_line_after_it(
    wren: Agent, tmp_path: Path
) -> None:
    data = exported(wren, tmp_path / "wren.gz", at=AT)
    text = gzip.decompress(data)
    head, _, rest = text.partition(b"\n")
    manifest = json.loads(head)
    assert list(manifest) == ["format", "version", "agent", "exported_at", "counts", "sha256"]
    assert manifest["format"] == "composition-lens-bundle"
    assert manifest["version"] == 1
    assert manifest["agent"] == "wren"
    assert manifest["exported_at"] == "2031-05-06T07:08:09.123456Z"
    assert manifest["sha256"] == hashlib.sha256(rest).hexdigest()
    assert rest.endswith(b"\n")
    types = [json.loads(line)["type"] for line in rest.splitlines()]
    assert manifest["counts"] == {kind: types.count(kind) for kind in TYPES}
    assert TYPES == (
        "agent", "revision", "routing_case", "memory", "promotion", "migrated_promotion",
        "event", "composition", "delivery", "audit",
    )  # fmt: skip
    assert types == sorted(types, key=TYPES.index)
    assert manifest["counts"]["delivery"] == 4
    assert manifest["counts"]["composition"] == 3


def test_two_exports_of_the_same_data_are_the_same_bytes(wren: Agent, tmp_path: Path) -> None:
    first = exported(wren, tmp_path / "a.gz", at=AT)
    second = exported(wren, tmp_path / "b.gz", at=AT)
    assert first == second
    later = exported(wren, tmp_path / "c.gz", at=AT + timedelta(days=1))
    assert bundle_text(later)[1:] == bundle_text(first)[1:]


def test_compositions_are_carried_as_their_stored_text(wren: Agent, tmp_path: Path) -> None:
    stored = {row[6]: row[7] for row in agent_state(wren)["deliveries"]}
    lines = [json.loads(line) for line in bundle_text(exported(wren, tmp_path / "w.gz"))]
    carried = {line["digest"]: line["text"] for line in lines if line.get("type") == "composition"}
    assert carried == stored
    for digest, text in carried.items():
        assert hashlib.sha256(text.encode()).hexdigest() == digest


def documented_fields() -> dict[str, tuple[list[str], list[str]]]:
    """docs/bundles.md's table of lines: for each type (``manifest`` for line 1), the
    fields every line has and those marked *when …*, each in the order they are listed."""
    text = (ROOT / "docs" / "bundles.md").read_text()
    table = text.split("| line | fields, in order |", 1)[1].split("\n\n", 1)[0]
    found: dict[str, tuple[list[str], list[str]]] = {}
    for row in table.splitlines()[2:]:
        name, fields = row.split(" | ")[:2]
        always, _, optional = fields.partition("*when")
        found[re.findall(r"`?(\w+)", name)[0]] = (
            re.findall(r"`(\w+)`", always),
            re.findall(r"`(\w+)`", optional),
        )
    return found


def test_the_documented_fields_are_the_fields_an_export_writes(
    team: Team, api: ApiClient, reviewer: User, tmp_path: Path, settings: Any
) -> None:
    """Each line holds its type's documented fields, in their order, and the documented
    optional fields only where they apply; an erasure makes every optional field appear,
    and a migration the rows it replaced."""
    ids = bundle_story(team, api, reviewer)
    erase_memory(ids["city"], Actor.for_user(reviewer), "Asked to be forgotten.")
    settings.MEMORY_ROUTING_SPECS = V2_SPECS
    store_agent(team, "wren", AgentConfig.model_validate(v2_config(about_user="earned")))
    wren = get_agent(team, "wren")
    apply_migration(wren, migration_plan(wren).sha256, actor=Actor.for_user(reviewer))
    # A memory saved in a session, and a sighting of it (SPEC §19.1).
    remember(wren, "profile", "Rides a bicycle.", session="morning")
    remember(wren, "profile", "rides a  bicycle.", session="evening")
    manifest, *lines = [
        json.loads(line)
        for line in bundle_text(exported(get_agent(team, "wren"), tmp_path / "w.gz"))
    ]
    documented = documented_fields()
    assert list(documented) == ["manifest", *TYPES]
    assert list(manifest) == documented["manifest"][0]
    assert not documented["manifest"][1]
    for kind in TYPES:
        always, optional = documented[kind]
        written: set[str] = set()
        for line in (line for line in lines if line["type"] == kind):
            keys = list(line)[1:]  # after "type"
            assert keys[: len(always)] == always, (kind, keys)
            extra = keys[len(always) :]
            assert extra == [name for name in optional if name in extra], (kind, keys)
            written.update(keys)
        assert written == {*always, *optional}, kind
        # And what an import accepts: the same fields.
        assert set(SCHEMAS[kind].model_fields) - {"type"} == {*always, *optional}, kind


def test_the_documented_values_are_every_value_a_line_can_hold() -> None:
    text = (ROOT / "docs" / "bundles.md").read_text()
    rows = {row.split(" | ")[0]: row for row in text.splitlines() if row.startswith("| `")}
    for kind, values in (
        ("revision", ViaName),
        ("promotion", PromotionStatusName),
        ("event", EventKindName),
    ):
        named = set(re.findall(r"`(\w+)`", rows[f"| `{kind}`"].split(" | ")[2]))
        assert set(get_args(values)) <= named, kind


def test_audit_lines_are_the_source_events_and_each_verifies_with_its_seal(
    wren: Agent, team: Team, tmp_path: Path
) -> None:
    lines = [json.loads(line) for line in bundle_text(exported(wren, tmp_path / "w.gz"))]
    events = [line["event"] for line in lines if line.get("type") == "audit"]
    expected = AuditEvent.objects.filter(team=team, agent="wren").order_by("seq")
    assert events == [event_data(row) for row in expected]
    assert all(seal(event) == event["sha256"] for event in events)
    assert {event["action"] for event in events} >= {
        "agent.created", "agent.revised", "memory.saved", "memory.approved",
        "memory.rejected", "memory.revoked", "memory.reopened", "memory.superseded",
        "delivery.recorded",
    }  # fmt: skip


def test_an_export_of_an_agent_with_nothing_yet_imports(
    team: Team, other_team: Team, tmp_path: Path
) -> None:
    agent = create_agent(team, "bare")
    path = tmp_path / "bare.gz"
    exported(agent, path)
    before = agent_state(agent)
    agent.delete()
    assert agent_state(import_bundle(path, other_team).agent) == before


# --- refusals ------------------------------------------------------------------------


def refused(path: Path, team: Team, slug: str | None = None) -> DomainError:
    unchanged = Unchanged()
    with pytest.raises(InvalidBundle) as caught:
        import_bundle(path, team, slug=slug)
    unchanged.check()
    return caught.value


def test_a_bundle_cut_short_inside_its_compressed_data_is_refused(
    wren: Agent, other_team: Team, tmp_path: Path
) -> None:
    data = exported(wren, tmp_path / "wren.gz")
    lines = len(bundle_text(data))
    path = tmp_path / "cut.gz"
    path.write_bytes(data[: len(data) * 2 // 3])
    error = refused(path, other_team, "cut")
    assert error.code == "invalid_bundle"
    line = error.details["line"]
    assert 1 < line <= lines
    assert error.message.startswith(f"line {line}: ")
    assert "cut short" in error.message


def test_a_bundle_missing_its_last_lines_is_refused_at_the_first_missing_line(
    wren: Agent, other_team: Team, tmp_path: Path
) -> None:
    lines = bundle_text(exported(wren, tmp_path / "wren.gz"))
    path = tmp_path / "short.gz"
    path.write_bytes(rebundle(lines[:-3], rehash=False))
    error = refused(path, other_team, "short")
    assert error.message == (
        f"line {len(lines) - 2}: the file ends here, with {_audit_lines(lines) - 3} of the "
        f"{_audit_lines(lines)} audit lines its manifest counts: it was cut short"
    )


def _audit_lines(lines: list[bytes]) -> int:
    return sum(1 for line in lines[1:] if json.loads(line)["type"] == "audit")


def test_a_last_line_without_its_line_break_is_refused(
    wren: Agent, other_team: Team, tmp_path: Path
) -> None:
    lines = bundle_text(exported(wren, tmp_path / "wren.gz"))
    path = tmp_path / "nobreak.gz"
    path.write_bytes(rebundle([*lines[:-1], lines[-1].rstrip(b"\n")], rehash=False))
    error = refused(path, other_team, "nobreak")
    assert error.message.startswith(f"line {len(lines)}: the last line has no line break")


def test_a_bundle_with_one_byte_altered_is_refused_by_its_hash(
    wren: Agent, other_team: Team, tmp_path: Path
) -> None:
    lines = bundle_text(exported(wren, tmp_path / "wren.gz"))
    (index,) = [
        i
        for i, line in enumerate(lines)
        if line.startswith(b'{"type":"memory"') and b"Tea, never coffee." in line
    ]
    lines[index] = lines[index].replace(b"Tea, never coffee.", b"Tea, never coffeE.")
    path = tmp_path / "altered.gz"
    path.write_bytes(rebundle(lines, rehash=False))
    error = refused(path, other_team, "altered")
    assert error.message.startswith(f"line 1: lines 2 to {len(lines)} hash to ")
    assert error.message.endswith("the bundle was altered")


def test_a_bundle_with_one_compressed_byte_altered_is_refused(
    wren: Agent, other_team: Team, tmp_path: Path
) -> None:
    data = bytearray(exported(wren, tmp_path / "wren.gz"))
    data[len(data) // 2] ^= 0x01
    path = tmp_path / "flipped.gz"
    path.write_bytes(bytes(data))
    error = refused(path, other_team, "flipped")
    assert error.code == "invalid_bundle"
    assert error.message.startswith(f"line {error.details['line']}: ")


def test_an_altered_audit_event_is_refused_even_with_the_hash_made_to_fit(
    wren: Agent, other_team: Team, tmp_path: Path
) -> None:
    lines = bundle_text(exported(wren, tmp_path / "wren.gz"))
    index = next(i for i, line in enumerate(lines) if line.startswith(b'{"type":"audit"'))
    line = json.loads(lines[index])
    line["event"]["actor"] = "someone else"
    lines[index] = json.dumps(line, ensure_ascii=False).encode() + b"\n"
    path = tmp_path / "audit.gz"
    path.write_bytes(rebundle(lines))
    error = refused(path, other_team, "audit")
    assert error.message == (
        f"line {index + 1}: the audit event does not hash to its sha256: it was altered"
    )


# --- what the bundle's own audit lines attest -----------------------------------------


def _lines_of(lines: list[bytes], kind: str) -> list[int]:
    return [i for i, line in enumerate(lines) if line.startswith(b'{"type":"%s"' % kind.encode())]


def _audit_events(lines: list[bytes]) -> list[tuple[int, dict[str, Any]]]:
    return [(i, json.loads(lines[i])["event"]) for i in _lines_of(lines, "audit")]


def _write(lines: list[bytes], index: int, data: dict[str, Any]) -> None:
    lines[index] = json.dumps(data, ensure_ascii=False).encode() + b"\n"


def _tea(lines: list[bytes]) -> tuple[int, dict[str, Any]]:
    (index,) = [i for i in _lines_of(lines, "memory") if b"Tea, never coffee." in lines[i]]
    return index, json.loads(lines[index])


def test_a_memory_edited_with_the_hash_made_to_fit_is_refused_by_its_saved_event(
    wren: Agent, other_team: Team, tmp_path: Path
) -> None:
    """The manifest's hash can be computed again by anyone; the memory.saved event that
    sealed the content's hash cannot be changed without breaking its own seal."""
    lines = bundle_text(exported(wren, tmp_path / "wren.gz"))
    index, line = _tea(lines)
    line["content"] = "Coffee, never tea."
    _write(lines, index, line)
    path = tmp_path / "edited.gz"
    path.write_bytes(rebundle(lines))
    wren.delete()  # so that nothing else stands in the way: the ids are free
    ((event_index, event),) = [
        (i, e) for i, e in _audit_events(lines)
        if e["action"] == "memory.saved" and e["object"]["id"] == line["id"]
    ]  # fmt: skip
    error = refused(path, other_team)
    assert error.code == "invalid_bundle"
    assert error.message == (
        f"line {index + 1}: memory {line['id']}: its content does not hash to the "
        f"content_sha256 of its memory.saved audit event (seq {event['seq']}, line "
        f"{event_index + 1}): it was altered"
    )
    assert error.details["line"] == index + 1
    assert not Agent.objects.filter(slug="wren").exists()


def test_a_revision_edited_with_its_config_hash_made_to_fit_is_refused_by_its_event(
    wren: Agent, other_team: Team, tmp_path: Path
) -> None:
    lines = bundle_text(exported(wren, tmp_path / "wren.gz"))
    index = _lines_of(lines, "revision")[1]  # revision 2, of 3: the declarations stay
    line = json.loads(lines[index])
    assert line["revision"] == 2
    line["config"]["persona"] = "You are someone else."
    line["config_sha256"] = hashlib.sha256(
        json.dumps(
            line["config"], sort_keys=True, separators=(",", ":"), ensure_ascii=False
        ).encode()
    ).hexdigest()
    _write(lines, index, line)
    path = tmp_path / "revised.gz"
    path.write_bytes(rebundle(lines))
    wren.delete()
    ((event_index, event),) = [
        (i, e) for i, e in _audit_events(lines)
        if e["action"] == "agent.revised" and e["details"]["revision"] == 2
    ]  # fmt: skip
    assert refused(path, other_team).message == (
        f"line {index + 1}: revision 2: its config_sha256 is not the config_sha256 of its "
        f"agent.revised audit event (seq {event['seq']}, line {event_index + 1}): it was altered"
    )


def test_an_audit_event_edited_and_sealed_again_is_refused_by_the_event_after_it(
    wren: Agent, other_team: Team, tmp_path: Path
) -> None:
    """The memory edited, its memory.saved event made to say the new hash and sealed
    again: the event after it in the log still names the old seal."""
    lines = bundle_text(exported(wren, tmp_path / "wren.gz"))
    index, line = _tea(lines)
    line["content"] = "Coffee, never tea."
    _write(lines, index, line)
    events = _audit_events(lines)
    at = next(
        n for n, (_i, e) in enumerate(events)
        if e["action"] == "memory.saved" and e["object"]["id"] == line["id"]
    )  # fmt: skip
    (event_index, event), (next_index, following) = events[at], events[at + 1]
    assert following["seq"] == event["seq"] + 1  # the next event of the log is here too
    event["details"]["content_sha256"] = hashlib.sha256(b"Coffee, never tea.").hexdigest()
    event["sha256"] = seal(event)
    _write(lines, event_index, {"type": "audit", "event": event})
    path = tmp_path / "resealed.gz"
    path.write_bytes(rebundle(lines))
    wren.delete()
    assert refused(path, other_team).message == (
        f"line {next_index + 1}: audit event {following['seq']} does not follow event "
        f"{event['seq']} (line {event_index + 1}): its prev_sha256 is not that event's "
        "sha256: the chain was altered"
    )


def test_audit_events_out_of_their_log_order_are_refused(
    wren: Agent, other_team: Team, tmp_path: Path
) -> None:
    lines = bundle_text(exported(wren, tmp_path / "wren.gz"))
    (first, one), (second, two) = _audit_events(lines)[3:5]
    lines[first], lines[second] = lines[second], lines[first]
    path = tmp_path / "swapped.gz"
    path.write_bytes(rebundle(lines))
    wren.delete()
    assert refused(path, other_team).message == (
        f"line {second + 1}: audit event {one['seq']} after event {two['seq']} (line "
        f"{first + 1}): events come in the order of their log"
    )


def test_an_erased_memory_whose_kept_hash_was_edited_is_refused(
    team: Team, api: ApiClient, reviewer: User, other_team: Team, tmp_path: Path
) -> None:
    ids = bundle_story(team, api, reviewer)
    erase_memory(ids["city"], Actor.for_user(reviewer), "Asked to be forgotten.")
    wren = get_agent(team, "wren")
    lines = bundle_text(exported(wren, tmp_path / "wren.gz"))
    (index,) = [i for i in _lines_of(lines, "memory") if ids["city"].encode() in lines[i][:60]]
    line = json.loads(lines[index])
    assert line["content"] == ""
    line["content_sha256"] = "0" * 64
    _write(lines, index, line)
    path = tmp_path / "erased.gz"
    path.write_bytes(rebundle(lines))
    wren.delete()
    assert refused(path, other_team).message.startswith(
        f"line {index + 1}: memory {ids['city']}: its content does not hash to the "
        "content_sha256 of its memory.saved audit event"
    )


def test_an_agent_imported_and_exported_again_imports_again(
    wren: Agent, reviewer: User, team: Team, other_team: Team, tmp_path: Path
) -> None:
    """Its memories' and earlier revisions' events stayed in the first team's log:
    there is nothing to check them against, and nothing refuses them."""
    Membership.objects.create(team=other_team, user=reviewer)  # who decided, there too
    exported(wren, tmp_path / "first.gz")
    before = agent_state(wren)
    wren.delete()
    moved = import_bundle(tmp_path / "first.gz", other_team).agent
    exported(moved, tmp_path / "second.gz")
    moved.delete()
    back = import_bundle(tmp_path / "second.gz", team).agent
    assert agent_state(back) == before


def test_the_events_of_an_earlier_agent_of_the_same_slug_are_not_this_ones(
    team: Team, other_team: Team, tmp_path: Path
) -> None:
    """An agent deleted (``agent.deleted``) and made again under its slug: the bundle
    holds both agents' events, and the earlier one's revision 1 is not this one's."""
    first = create_agent(team, "wren")
    with transaction.atomic():
        entry = Entry("agent.deleted", "agent", "wren", "wren", {"agent_id": first.pk})
        append_one(team.pk, "root", entry)  # as the admin's delete does
        first.delete()
    again = create_agent(team, "wren", {**SAMPLE_CONFIG, "persona": "You are Wren, again."})
    lines = bundle_text(exported(again, tmp_path / "wren.gz"))
    created = [e for _i, e in _audit_events(lines) if e["action"] == "agent.created"]
    assert [e["details"]["revision"] for e in created] == [1, 1]
    assert created[0]["details"]["config_sha256"] != created[1]["details"]["config_sha256"]
    again.delete()
    assert import_bundle(tmp_path / "wren.gz", other_team).revision == 1


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"format": "some-other-bundle"}, "this is not a composition-lens-bundle file"),
        ({"version": 2}, "bundle version 2 is not supported: this reads version 1"),
        ({"version": "1"}, "bundle version '1' is not supported"),
        ({"extra": True}, "the manifest does not read: extra"),
    ],
)
def test_a_manifest_of_another_format_or_version_is_refused(
    wren: Agent, other_team: Team, tmp_path: Path, change: dict[str, Any], problem: str
) -> None:
    lines = bundle_text(exported(wren, tmp_path / "wren.gz"))
    manifest = {**json.loads(lines[0]), **change}
    lines[0] = json.dumps(manifest).encode() + b"\n"
    path = tmp_path / "other.gz"
    path.write_bytes(rebundle(lines, rehash=False))
    assert refused(path, other_team, "other").message.startswith(f"line 1: {problem}")


def test_a_file_that_is_not_gzip_is_refused(other_team: Team, tmp_path: Path) -> None:
    path = tmp_path / "plain.jsonl"
    path.write_bytes(b'{"format": "composition-lens-bundle"}\n')
    error = refused(path, other_team)
    assert error.message.startswith("line 1: the file is not intact gzip data")


def test_an_empty_file_is_refused(other_team: Team, tmp_path: Path) -> None:
    path = tmp_path / "empty.gz"
    path.write_bytes(gzip.compress(b""))
    assert refused(path, other_team).message == "line 1: the file is empty: there is no manifest"


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        (b'{"type": "memory", "id": \n', "the line is not valid JSON"),
        (b"[1, 2]\n", "the line is not a JSON object"),
        (
            b'{"type": "memory", "x": NaN}\n',
            "the line is not valid JSON (NaN is not a JSON number)",
        ),
        (b'{"type": "spaceship"}\n', "unknown line type 'spaceship'"),
        (b"\xff\xfe\n", "the line is not UTF-8 text"),
        (b"\n", "the line is not valid JSON"),
    ],
)
def test_a_malformed_line_is_refused_naming_it(
    wren: Agent, other_team: Team, tmp_path: Path, bad: bytes, problem: str
) -> None:
    lines = bundle_text(exported(wren, tmp_path / "wren.gz"))
    index = next(i for i, line in enumerate(lines) if line.startswith(b'{"type":"memory"')) + 2
    lines[index] = bad
    path = tmp_path / "bad.gz"
    path.write_bytes(rebundle(lines, rehash=False))
    assert refused(path, other_team, "bad").message.startswith(f"line {index + 1}: {problem}")


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("id", "NOT-AN-ID", "a memory line that does not read: id: 'NOT-AN-ID' is not an id"),
        ("kind", "k" * 33, "a memory line that does not read: kind: String should have at most"),
        ("created_at", "2024-01-01 10:00", "a memory line that does not read: created_at: a time"),
        ("content", "nul\x00", "content: text must not contain NUL"),
        ("surprise", 1, "a memory line that does not read: surprise: Extra inputs"),
    ],
)
def test_a_line_that_does_not_fit_its_type_is_refused_naming_it(
    wren: Agent,
    other_team: Team,
    tmp_path: Path,
    field: str,
    value: Any,
    problem: str,
) -> None:
    lines = bundle_text(exported(wren, tmp_path / "wren.gz"))
    index = next(i for i, line in enumerate(lines) if line.startswith(b'{"type":"memory"'))
    line = json.loads(lines[index])
    line[field] = value
    lines[index] = json.dumps(line).encode() + b"\n"
    path = tmp_path / "unfit.gz"
    path.write_bytes(rebundle(lines))
    assert refused(path, other_team, "unfit").message.startswith(f"line {index + 1}: {problem}")


DEEP = b"[" * 100_000 + b"]" * 100_000


def _deepened(lines: list[bytes], kind: str, edit: Any) -> int:
    """The first line of ``kind`` with ``edit`` applied to it (its JSON): its index."""
    index = _lines_of(lines, kind)[0]
    line = json.loads(lines[index])
    edit(line)
    lines[index] = json.dumps(line, ensure_ascii=False).encode() + b"\n"
    return index


def _nested(depth: int) -> Any:
    value: Any = []
    for _ in range(depth - 1):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("kind", "edit", "problem"),
    [
        ("memory", None, "the line nests arrays and objects more than 64 deep"),
        (
            "memory",
            lambda line: line.update(tags=_nested(900)),  # parses; too deep for the readers
            "the line nests arrays and objects more than 64 deep",
        ),
        (
            "audit",
            lambda line: line["event"]["details"].update(deep=_nested(900)),
            "the line nests arrays and objects more than 64 deep",
        ),
        (
            "event",
            lambda line: line.update(detail={"deep": _nested(64)}),  # 66 with the line's own
            "the line nests arrays and objects more than 64 deep",
        ),
        (
            "composition",
            # Redacted: its text is parsed without its digest checked first.
            lambda line: line.update(text=DEEP.decode(), redacted_at=line["created_at"]),
            "a composition line that does not read: text is not a composition",
        ),
    ],
    ids=["brackets", "memory-tags", "audit-details", "event-detail", "composition-text"],
)
def test_a_line_nested_too_deep_is_refused_in_one_line(
    wren: Agent, other_team: Team, tmp_path: Path, kind: str, edit: Any, problem: str
) -> None:
    """100,000 nested brackets went past the JSON parser's recursion, and 900 past the
    readers' after it (a RecursionError and its traceback): a line is refused instead."""
    lines = bundle_text(exported(wren, tmp_path / "wren.gz"))
    if edit is None:
        index = _lines_of(lines, kind)[0]
        lines[index] = DEEP + b"\n"
    else:
        index = _deepened(lines, kind, edit)
    path = tmp_path / "deep.gz"
    path.write_bytes(rebundle(lines, rehash=edit is not None))
    wren.delete()
    assert refused(path, other_team).message.startswith(f"line {index + 1}: {problem}")


def _delivery_lines(lines: list[bytes]) -> list[int]:
    return [i for i, line in enumerate(lines) if line.startswith(b'{"type":"delivery"')]


def test_a_bundle_exported_before_the_cache_figures_imports_them_as_null(
    wren: Agent, reviewer: User, other_team: Team, tmp_path: Path
) -> None:
    lines = bundle_text(exported(wren, tmp_path / "wren.gz"))
    for index in _delivery_lines(lines):
        line = json.loads(lines[index])
        assert set(line["cache"]) == {"prefix_tokens", "prefix_chars", "first_change"}
        del line["cache"]
        lines[index] = json.dumps(line).encode() + b"\n"
    path = tmp_path / "older.gz"
    path.write_bytes(rebundle(lines))
    wren.delete()  # the ids are this instance's keys: a move frees them first
    Membership.objects.create(team=other_team, user=reviewer)
    agent = import_bundle(path, other_team, slug="older").agent
    rows = Delivery.objects.filter(agent=agent)
    assert rows.count() == 4
    assert set(rows.values_list("cache_prefix_tokens", "changed_section")) == {(None, None)}


@pytest.mark.parametrize(
    ("cache", "problem"),
    [
        (
            {"prefix_tokens": 10**9, "prefix_chars": 0, "first_change": None},
            "its cached prefix is longer than its prompt",
        ),
        (
            {"prefix_tokens": -1, "prefix_chars": 0, "first_change": None},
            "a delivery line that does not read: cache.prefix_tokens",
        ),
        (
            {
                "prefix_tokens": 0,
                "prefix_chars": 0,
                "first_change": {"section": "Preface", "background_section": None},
            },
            "a delivery line that does not read: cache.first_change.section",
        ),
        (
            {
                "prefix_tokens": 0,
                "prefix_chars": 0,
                "first_change": {"section": "Persona", "background_section": "x"},
            },
            "a delivery line that does not read: cache.first_change: only a change in the Context",
        ),
    ],
)
def test_a_delivery_with_impossible_cache_figures_is_refused(
    wren: Agent, other_team: Team, tmp_path: Path, cache: dict[str, Any], problem: str
) -> None:
    lines = bundle_text(exported(wren, tmp_path / "wren.gz"))
    index = _delivery_lines(lines)[-1]
    line = json.loads(lines[index])
    line["cache"] = cache
    lines[index] = json.dumps(line).encode() + b"\n"
    path = tmp_path / "figures.gz"
    path.write_bytes(rebundle(lines))
    wren.delete()  # so that the check reached is the delivery's
    assert refused(path, other_team, "figures").message.startswith(f"line {index + 1}: {problem}")
    assert not Agent.objects.filter(slug="figures").exists()


def test_lines_out_of_order_are_refused(wren: Agent, other_team: Team, tmp_path: Path) -> None:
    lines = bundle_text(exported(wren, tmp_path / "wren.gz"))
    index = next(i for i, line in enumerate(lines) if line.startswith(b'{"type":"memory"'))
    lines.append(lines.pop(index))
    path = tmp_path / "order.gz"
    path.write_bytes(rebundle(lines))
    assert refused(path, other_team, "order").message == (
        f"line {len(lines)}: a memory line after the audit lines: lines come in the order "
        "agent, revision, routing_case, memory, promotion, migrated_promotion, event, "
        "composition, delivery, audit"
    )


def test_a_bundle_whose_memory_ids_are_taken_here_is_refused_naming_the_first(
    wren: Agent, other_team: Team, tmp_path: Path
) -> None:
    path = tmp_path / "wren.gz"
    lines = bundle_text(exported(wren, path))
    first = next(i for i, line in enumerate(lines) if line.startswith(b'{"type":"memory"'))
    memory_id = json.loads(lines[first])["id"]
    error = refused(path, other_team, "copy")
    assert isinstance(error, BundleConflict)
    assert error.code == "bundle_conflict"
    assert error.message == (
        f"line {first + 1}: memory {memory_id} already exists in this instance"
    )


def test_a_bundle_whose_delivery_ids_are_taken_here_is_refused(
    wren: Agent, other_team: Team, api: ApiClient, tmp_path: Path
) -> None:
    path = tmp_path / "wren.gz"
    lines = bundle_text(exported(wren, path))
    taken = deliver_through(api)["delivery_id"]
    # Only the delivery's id is taken: its memories left with the agent's other rows.
    MemoryRecord.objects.filter(agent=wren).delete()
    Delivery.objects.filter(agent=wren).exclude(pk=taken).delete()
    first = next(i for i, line in enumerate(lines) if line.startswith(b'{"type":"delivery"'))
    lines[first] = lines[first].replace(json.loads(lines[first])["id"].encode(), taken.encode())
    edited = tmp_path / "taken.gz"
    edited.write_bytes(rebundle(lines))
    error = refused(edited, other_team, "copy")
    assert error.message == f"line {first + 1}: delivery {taken} already exists in this instance"


def test_a_bundle_into_a_team_that_has_its_slug_is_refused(
    wren: Agent, team: Team, tmp_path: Path
) -> None:
    path = tmp_path / "wren.gz"
    exported(wren, path)
    error = refused(path, team)
    assert error.message == (
        "line 2: team 'acme' already has an agent 'wren': import it under another slug"
    )


def test_a_bundle_naming_a_routing_spec_this_instance_lacks_is_refused(
    wren: Agent, other_team: Team, tmp_path: Path
) -> None:
    lines = bundle_text(exported(wren, tmp_path / "wren.gz"))
    agent_line = json.loads(lines[1])
    agent_line["config"]["routing_spec"] = "someone-elses-spec"
    lines[1] = json.dumps(agent_line, ensure_ascii=False).encode() + b"\n"
    path = tmp_path / "spec.gz"
    path.write_bytes(rebundle(lines))
    error = refused(path, other_team, "spec")
    assert error.code == "bundle_conflict"
    assert error.message.startswith("line 2: Unknown routing spec 'someone-elses-spec' (known: ")


def test_a_bundle_with_one_memory_twice_is_refused_at_the_second(
    wren: Agent, other_team: Team, tmp_path: Path
) -> None:
    lines = bundle_text(exported(wren, tmp_path / "wren.gz"))
    first = next(i for i, line in enumerate(lines) if line.startswith(b'{"type":"memory"'))
    lines.insert(first + 1, lines[first])
    path = tmp_path / "twice.gz"
    path.write_bytes(rebundle(lines))
    wren.delete()
    assert refused(path, other_team).message == (
        f"line {first + 2}: a second memory with the same id"
    )


def test_a_delivery_of_a_composition_the_bundle_lacks_is_refused(
    wren: Agent, other_team: Team, tmp_path: Path
) -> None:
    lines = bundle_text(exported(wren, tmp_path / "wren.gz"))
    index = next(i for i, line in enumerate(lines) if line.startswith(b'{"type":"delivery"'))
    line = json.loads(lines[index])
    line["composition"] = "0" * 64
    lines[index] = json.dumps(line).encode() + b"\n"
    path = tmp_path / "orphan.gz"
    path.write_bytes(rebundle(lines))
    wren.delete()
    assert refused(path, other_team).message == (
        f"line {index + 1}: its composition {'0' * 64} is not on an earlier line"
    )


def test_an_invalid_slug_is_refused_before_anything_is_read(
    wren: Agent, other_team: Team, tmp_path: Path
) -> None:
    path = tmp_path / "wren.gz"
    exported(wren, path)
    unchanged = Unchanged()
    with pytest.raises(DomainError) as caught:
        import_bundle(path, other_team, slug="Not A Slug")
    assert caught.value.code == "invalid_slug"
    unchanged.check()


def test_verifying_reads_everything_and_writes_nothing(wren: Agent, tmp_path: Path) -> None:
    path = tmp_path / "wren.gz"
    exported(wren, path)
    unchanged = Unchanged()
    manifest = verify_bundle(path)
    unchanged.check()
    assert manifest.agent == "wren"


# --- bounded memory ------------------------------------------------------------------


def _many_deliveries(agent: Agent, api: ApiClient, count: int) -> None:
    """``count`` deliveries like the agent's newest (what a runtime records when nothing
    changed), a second apart, written in bulk."""
    newest = Delivery.objects.filter(agent=agent).order_by("-delivered_at").first()
    assert newest is not None
    start = newest.delivered_at + timedelta(seconds=1)
    Delivery.objects.bulk_create(
        (
            Delivery(
                agent=agent,
                composition_id=newest.composition_id,
                delivered_at=start + timedelta(seconds=i),
                session=f"session-{i:06d}",
                model="gpt-4.1-mini",
                revision=newest.revision,
            )
            for i in range(count)
        ),
        batch_size=1000,
    )


def _peak_bytes(agent: Agent, tmp_path: Path) -> int:
    tracemalloc.start()
    try:
        bundle = export_bundle(agent)
        with (tmp_path / "big.gz").open("wb") as out:
            bundle.write_to(out)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_exporting_holds_a_chunk_of_deliveries_in_memory_never_all_of_them(
    wren: Agent, api: ApiClient, tmp_path: Path
) -> None:
    _many_deliveries(wren, api, 2_000)
    some = _peak_bytes(wren, tmp_path)
    _many_deliveries(wren, api, 8_000)
    many = _peak_bytes(wren, tmp_path)
    lines = bundle_text((tmp_path / "big.gz").read_bytes())
    deliveries = [line for line in lines if line.startswith(b'{"type":"delivery"')]
    assert len(deliveries) == 10_004
    held = sum(len(line) for line in deliveries)
    # Five times the deliveries, and the peak hardly moves: a chunk of rows at a time,
    # whatever their number (read into a list, the 8,000 more took 4.7 MB more). All of
    # them would take more than their lines' 2.3 MB.
    assert many - some < 512 * 1024, (some, many)
    assert many < held, (many, held)


def _import_peak_bytes(path: Path, team: Team, slug: str) -> int:
    tracemalloc.start()
    try:
        import_bundle(path, team, slug=slug)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_importing_holds_a_batch_of_lines_in_memory_never_all_of_them(
    wren: Agent, api: ApiClient, other_team: Team, tmp_path: Path
) -> None:
    _many_deliveries(wren, api, 2_000)
    exported(wren, tmp_path / "some.gz")
    _many_deliveries(wren, api, 8_000)
    exported(wren, tmp_path / "many.gz")
    wren.delete()  # the ids are this instance's keys
    some = _import_peak_bytes(tmp_path / "some.gz", other_team, "some")
    Agent.objects.get(team=other_team, slug="some").delete()
    many = _import_peak_bytes(tmp_path / "many.gz", other_team, "many")
    assert Delivery.objects.filter(agent__slug="many").count() == 10_004
    # Five times the deliveries, and the peak stays that of one batch of lines
    # (``BATCH_LINES``), read, checked and written a few hundred rows a statement: it
    # moved 0.2 MB on SQLite and up to 1.1 MB on PostgreSQL (the driver's buffers),
    # where the 8,000 more deliveries held as parsed lines would take several times
    # their 1.8 MB of text.
    assert many - some < 2 * 1024 * 1024, (some, many)


def test_each_query_of_an_export_reads_its_rows_in_bounded_chunks(
    wren: Agent, api: ApiClient, tmp_path: Path, django_assert_max_num_queries: Any
) -> None:
    _many_deliveries(wren, api, 3_000)
    # A fixed number of statements whatever the number of deliveries: each type is one
    # query, read in chunks (a cursor's fetches), never one statement per row.
    with django_assert_max_num_queries(20):
        export_bundle(wren).close()
    assert connection.features.can_use_chunked_reads


# --- across databases ----------------------------------------------------------------

POSTGRES = "postgres://postgres@127.0.0.1:5432"
# Run in the other instance: the team to import into, with the reviewer as a member
# (decisions keep who made them), then, once imported, the agent's state as JSON.
SET_UP = (
    "from lens.models import Membership, Team; from tests.factories import make_user;"
    "Membership.objects.create(team=Team.objects.create(slug='far', name='Far'),"
    " user=make_user('mira'))"
)
STATE = (
    "import json; from lens.agents import get_agent; from lens.models import Team;"
    "from tests.factories import agent_state;"
    "print(json.dumps(agent_state(get_agent(Team.objects.get(slug='far'), 'wren')),"
    " default=str, sort_keys=True))"
)


@contextmanager
def other_database(tmp_path: Path) -> Iterator[str]:
    """A fresh empty database of the other backend than the tests': PostgreSQL when
    they run on SQLite (skipped when no server answers), else a SQLite file."""
    if connection.vendor != "sqlite":
        yield f"sqlite:///{tmp_path / 'other.sqlite3'}"
        return
    import psycopg

    name = f"lens_bundles_{uuid.uuid4().hex[:12]}"
    try:
        admin = psycopg.connect(f"{POSTGRES}/postgres", autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as exc:
        pytest.skip(f"PostgreSQL is not reachable: {exc}")
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield f"{POSTGRES}/{name}"
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def manage(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=clean_env(DEBUG="1", DATABASE_URL=url),
        capture_output=True,
        text=True,
        timeout=300,
    )


def managed(url: str, *args: str) -> str:
    done = manage(url, *args)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.slow
def test_a_bundle_goes_to_the_other_database_and_back_unchanged(
    wren: Agent, team: Team, tmp_path: Path
) -> None:
    before = agent_state(wren)
    there, back = tmp_path / "there.gz", tmp_path / "back.gz"
    exported(wren, there)
    with other_database(tmp_path) as url:
        managed(url, "migrate", "-v0")
        managed(url, "shell", "-c", SET_UP)
        out = managed(url, "import_agent", str(there), "--team", "far")
        assert out.startswith("Imported agent wren into team far: 1 agent, 3 revisions,")
        # The same bundle again, under another slug: its ids are taken there now.
        again = manage(url, "import_agent", str(there), "--team", "far", "--slug", "again")
        assert again.returncode == 1
        (problem,) = again.stderr.strip().splitlines()
        assert " line 8: memory " in problem
        assert problem.endswith("already exists in this instance")
        remote = json.loads(managed(url, "shell", "-c", STATE).splitlines()[-1])
        managed(url, "export_agent", "wren", "--team", "far", "-o", str(back))
    assert remote == json.loads(json.dumps(before, default=str, sort_keys=True))

    # Every line but the audit events (there, the import's one event) comes back as it went.
    sent, returned = bundle_text(there.read_bytes()), bundle_text(back.read_bytes())
    assert _without_audit(returned[1:]) == _without_audit(sent[1:])
    wren.delete()
    assert agent_state(import_bundle(back, team).agent) == before


def _without_audit(lines: list[bytes]) -> list[bytes]:
    return [line for line in lines if not line.startswith(b'{"type":"audit"')]


def test_the_line_schemas_take_every_value_the_columns_hold() -> None:
    assert list(get_args(PromptSectionName)) == SECTION_ORDER
    assert set(get_args(ViaName)) == set(Via.values)
    assert set(get_args(PromotionStatusName)) == set(PromotionStatus.values)
    assert set(get_args(EventKindName)) == set(EventKind.values)


def test_routing_cases_travel_in_the_bundle_in_their_order(
    team: Team, api: ApiClient, reviewer: User, other_team: Team, tmp_path: Path
) -> None:
    bundle_story(team, api, reviewer)
    wren = get_agent(team, "wren")
    sent = api.get("/api/agents/wren/routing-cases").json()
    path = tmp_path / "w.gz"
    exported(wren, path)
    lines = [json.loads(line) for line in bundle_text(path.read_bytes())]
    cases = [line for line in lines if line.get("type") == "routing_case"]
    assert [{k: v for k, v in line.items() if k != "type"} for line in cases] == sent["cases"]
    wren.delete()  # its memories' ids are free again
    imported = import_bundle(path, other_team).agent
    assert [c.answer() for c in stored_cases(imported)] == sent["cases"]
    # The import is its one event: the cases have none of their own.
    actions = list(AuditEvent.objects.filter(team=other_team).values_list("action", flat=True))
    assert actions == ["agent.created"]
