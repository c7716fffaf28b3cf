"""A bundle's file (``memory.core.bundle_format``, ``bundle_lines``), without a database:
what the writer makes, and every check the reader makes before an import writes a row.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
from collections.abc import Callable
from typing import Any

import pytest

from lens.core.config import AgentConfig
from lens.core.revisions import canonical_config, config_sha256
from memory.core.bundle_format import (
    BodyWriter,
    BundleReader,
    InvalidBundle,
    counts_in_words,
    encode_line,
    framing,
    manifest,
)
from memory.core.bundle_lines import parse_stamp, stamp
from tests.samples import SAMPLE_CONFIG

T0 = "2030-01-02T03:04:05.000006Z"
COMPOSITION = json.dumps(
    {
        "agent": "wren",
        "prompt": {
            "sections": [
                {"fragments": [{"source": "authored", "text": "## Persona\nHi"}]},
                {
                    "fragments": [
                        {"source": "memory", "text": "- **name**: Doug\n", "memory_ids": ["m1"]}
                    ]
                },
            ]
        },
    },
    separators=(",", ":"),
)
PROMPT = "## Persona\nHi\n\n- **name**: Doug\n"


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def agent_line() -> dict[str, Any]:
    config = AgentConfig.model_validate(SAMPLE_CONFIG)
    return {
        "type": "agent",
        "slug": "wren",
        "created_at": T0,
        "updated_at": T0,
        "config": config.model_dump(mode="json"),
    }


def revision_line(number: int = 1) -> dict[str, Any]:
    config = AgentConfig.model_validate(SAMPLE_CONFIG)
    return {
        "type": "revision",
        "revision": number,
        "created_at": T0,
        "actor": "system",
        "via": "api",
        "approved_by": None,
        "config_sha256": config_sha256(canonical_config(config)),
        "summary": [{"change": "section_added", "section": "user_profile"}],
        "config": json.loads(canonical_config(config)),
    }


def memory_line() -> dict[str, Any]:
    return {
        "type": "memory",
        "id": "m1",
        "kind": "profile",
        "content": "Doug",
        "tags": [],
        "label": "name",
        "supersedes": None,
        "created_at": T0,
    }


def composition_line() -> dict[str, Any]:
    return {
        "type": "composition",
        "digest": sha(COMPOSITION),
        "prompt_sha256": sha(PROMPT),
        "chars": len(PROMPT),
        "tokens": 9,
        "sections": 1,
        "entries": 1,
        "memory_ids": ["m1"],
        "created_at": T0,
        "text": COMPOSITION,
    }


def delivery_line(at: str = T0, revision: int | None = 1) -> dict[str, Any]:
    return {
        "type": "delivery",
        "id": "d1",
        "delivered_at": at,
        "session": None,
        "model": None,
        "revision": revision,
        "composition": sha(COMPOSITION),
    }


def lines() -> list[dict[str, Any]]:
    return [agent_line(), revision_line(), memory_line(), composition_line(), delivery_line()]


def written(body_lines: list[dict[str, Any]]) -> bytes:
    """A bundle as the exporter writes it."""
    sink = io.BytesIO()
    writer = BodyWriter(sink)
    for line in body_lines:
        writer.write(line)
    body = writer.finish()
    data = manifest("wren", T0, body)
    head, tail = framing(data, body)
    return head + sink.getvalue() + tail


def read(data: bytes) -> list[Any]:
    reader = BundleReader(io.BytesIO(data))
    return [numbered.line for numbered in reader.lines()]


def problem(data: bytes) -> str:
    with pytest.raises(InvalidBundle) as caught:
        read(data)
    assert caught.value.code == "invalid_bundle"
    assert caught.value.message.startswith(f"line {caught.value.details['line']}: ")
    return caught.value.message


def hand_made(body: list[bytes], **manifest_fields: Any) -> bytes:
    """A bundle of raw lines, its manifest hashing and counting them unless told."""
    counts = dict.fromkeys(
        ("agent", "revision", "memory", "promotion", "event", "composition", "delivery", "audit"),
        0,
    )
    for line in body:
        counts[json.loads(line)["type"]] += 1
    head = {
        "format": "composition-lens-bundle",
        "version": 1,
        "agent": "wren",
        "exported_at": T0,
        "counts": counts,
        "sha256": hashlib.sha256(b"".join(body)).hexdigest(),
        **manifest_fields,
    }
    return gzip.compress(json.dumps(head).encode() + b"\n" + b"".join(body))


def raw(line: dict[str, Any]) -> bytes:
    return json.dumps(line).encode() + b"\n"


# --- writing -------------------------------------------------------------------------


def test_a_written_bundle_reads_back_line_for_line() -> None:
    data = written(lines())
    found = read(data)
    assert [line.type for line in found] == [
        "agent",
        "revision",
        "memory",
        "composition",
        "delivery",
    ]
    assert found[3].text == COMPOSITION
    text = gzip.decompress(data)
    head, _, rest = text.partition(b"\n")
    assert json.loads(head)["sha256"] == hashlib.sha256(rest).hexdigest()
    assert json.loads(head)["counts"] == {
        "agent": 1, "revision": 1, "routing_case": 0, "memory": 1, "promotion": 0,
        "migrated_promotion": 0, "event": 0, "composition": 1,
        "delivery": 1, "audit": 0,
    }  # fmt: skip


def test_a_line_keeps_its_fields_order_and_sorts_every_object_inside() -> None:
    line = encode_line({"type": "event", "detail": {"b": 1, "a": {"d": 2, "c": 3}}, "at": T0})
    assert (
        line == ('{"type":"event","detail":{"a":{"c":3,"d":2},"b":1},"at":"' + T0 + '"}\n').encode()
    )


def test_a_line_has_one_line_break_whatever_its_text_holds() -> None:
    text = "a\nb\r\u2028c\u0085d\x00"
    line = encode_line({"type": "memory", "content": text})
    assert line.count(b"\n") == 1
    assert line.endswith(b"\n")
    assert json.loads(line)["content"] == text
    assert "\u2028".encode() in line  # UTF-8 as it is, not escaped


def test_times_are_utc_with_microseconds_and_read_back_exactly() -> None:
    assert stamp(parse_stamp(T0)) == T0
    for bad in ("2030-01-02T03:04:05Z", "2030-01-02T03:04:05.000006+00:00", "2030-01-02", 5):
        with pytest.raises(ValueError, match="YYYY-MM-DDTHH:MM:SS.ffffffZ"):
            parse_stamp(bad)


def test_counts_in_words_name_every_type() -> None:
    assert counts_in_words({"agent": 1, "memory": 2, "delivery": 1, "audit": 3}) == (
        "1 agent, 0 revisions, 0 routing cases, 2 memories, 0 promotions, "
        "0 migrated promotions, 0 events, 0 compositions, "
        "1 delivery, 3 audit events"
    )


# --- reading: the whole file ---------------------------------------------------------


def test_more_lines_of_a_type_than_the_manifest_counts_are_refused_at_the_extra_one() -> None:
    body = [raw(line) for line in lines()]
    data = hand_made(body, counts={"agent": 1, "revision": 1, "memory": 0})
    assert problem(data) == "line 4: more memory lines than the manifest counts (0)"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"counts": {"agent": 1, "ghost": 0}},
            "line 1: the manifest counts lines of an unknown type 'ghost'",
        ),
        ({"counts": {"agent": 2}}, "line 1: the manifest must count exactly one agent line"),
        ({"counts": {"agent": 1, "memory": -1}}, "line 1: the manifest counts a negative number"),
        ({"sha256": "xyz"}, "line 1: the manifest does not read: sha256: String should match"),
        ({"agent": 7}, "line 1: the manifest does not read: agent: Input should be a valid string"),
    ],
)
def test_a_manifest_that_does_not_read_is_refused(fields: dict[str, Any], message: str) -> None:
    data = hand_made([raw(agent_line())], **fields)
    assert problem(data).startswith(message)


def test_a_manifest_that_is_not_an_object_is_not_a_bundle() -> None:
    assert problem(gzip.compress(b"[]\n")) == "line 1: this is not a composition-lens-bundle file"


# --- reading: one line after another -------------------------------------------------


def with_line(index: int, change: Callable[[dict[str, Any]], dict[str, Any]]) -> bytes:
    body = lines()
    body[index] = change(body[index])
    return hand_made([raw(line) for line in body])


def test_the_agent_line_comes_first() -> None:
    body = [raw(revision_line()), raw(agent_line())]
    assert problem(hand_made(body)).startswith("line 3: an agent line after the revision lines")


def test_revisions_are_numbered_without_gaps() -> None:
    data = with_line(1, lambda line: {**line, "revision": 2})
    assert problem(data) == (
        "line 3: revision 2 follows revision 0: revisions are numbered 1, 2, … without gaps"
    )


def test_a_revision_whose_config_is_not_its_hash_is_refused() -> None:
    data = with_line(1, lambda line: {**line, "config": {**line["config"], "tone": "Cold."}})
    assert problem(data) == (
        "line 3: a revision line that does not read: config does not hash to config_sha256"
    )


def test_a_summary_change_outside_the_closed_set_is_refused() -> None:
    data = with_line(1, lambda line: {**line, "summary": [{"change": "section_exploded"}]})
    assert problem(data).startswith("line 3: a revision line that does not read: summary")


def test_a_delivery_naming_a_revision_the_bundle_lacks_is_refused() -> None:
    data = with_line(4, lambda line: {**line, "revision": 2})
    assert problem(data) == "line 6: the delivery names revision 2, which the bundle lacks"


def test_deliveries_come_in_time_order_each_at_its_own_time() -> None:
    body = [*lines(), {**delivery_line(), "id": "d2"}]
    data = hand_made([raw(line) for line in body])
    assert problem(data) == (
        "line 7: deliveries come in the order they were made, each at its own time"
    )


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("digest", "0" * 64, "text does not hash to digest"),
        ("prompt_sha256", "0" * 64, "prompt_sha256 is not the hash of the composition's prompt"),
        ("chars", 3, "chars is not the length of the composition's prompt"),
        ("memory_ids", ["m2"], "memory_ids are not the composition's memories, sorted"),
    ],
)
def test_a_composition_line_must_agree_with_its_text(field: str, value: Any, message: str) -> None:
    data = with_line(3, lambda line: {**line, field: value})
    assert problem(data) == f"line 5: a composition line that does not read: {message}"


def test_a_composition_whose_text_is_not_a_composition_is_refused() -> None:
    text = '{"no":"prompt"}'
    data = with_line(3, lambda line: {**line, "text": text, "digest": sha(text)})
    assert (
        problem(data) == "line 5: a composition line that does not read: text is not a composition"
    )


@pytest.mark.parametrize("value", ["\ud800", "a\x00b"])
def test_text_no_database_can_store_is_refused(value: str) -> None:
    data = with_line(2, lambda line: {**line, "content": value})
    assert problem(data).startswith("line 4: content: text must not contain")


def test_an_audit_line_must_hold_an_event() -> None:
    body = [*lines(), {"type": "audit", "event": {"seq": 1}}]
    assert problem(hand_made([raw(line) for line in body])).startswith(
        "line 7: an audit line that does not read"
    )
