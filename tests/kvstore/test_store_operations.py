"""The key/value store's operations (``kvstore.store``) called directly, without HTTP
(SPEC §7): what each returns, and that every refusal raises its coded error having
written nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest

from kvstore.core.keys import PAYLOAD_MAX_RUNES
from kvstore.models import Key, Version
from kvstore.store import (
    InvalidKey,
    KeyNotFound,
    PayloadTooLarge,
    StoreError,
    VersionConflict,
    VersionNotFound,
    delete,
    diff,
    history,
    list_keys,
    read,
    write,
)
from lens.models import Team

pytestmark = pytest.mark.django_db


def tables() -> tuple[list[Mapping[str, object]], list[Mapping[str, object]]]:
    """Every key row and every version row, exactly."""
    return (
        list(Key.objects.order_by("pk").values()),
        list(Version.objects.order_by("pk").values()),
    )


def listed(team: Team, prefix: str, limit: int = 50, offset: int = 0) -> list[str]:
    return [meta.key for meta in list_keys(team, prefix, limit, offset).keys]


# --- write and read --------------------------------------------------------------------


def test_the_first_write_is_version_one_and_each_write_appends_the_next(team: Team) -> None:
    first = write(team, "must.craft", "one")
    second = write(team, "must.craft", "two, longer")
    assert (first.key, first.version, first.runes) == ("must.craft", 1, 3)
    assert (second.version, second.runes) == (2, 11)
    assert second.written_at >= first.written_at
    assert Version.objects.filter(key__key="must.craft").count() == 2


def test_read_returns_the_latest_version_or_a_pinned_one(team: Team) -> None:
    write(team, "root", "first")
    written = write(team, "root", "second ☕")
    latest = read(team, "root")
    assert (latest.key, latest.version, latest.payload, latest.runes) == (
        "root",
        2,
        "second ☕",
        8,
    )
    assert latest.written_at == written.written_at
    assert latest.written_at.tzinfo is not None
    assert read(team, "root", 1).payload == "first"


def test_if_version_lands_when_it_names_the_current_version(team: Team) -> None:
    assert write(team, "root", "a", if_version=0).version == 1
    assert write(team, "root", "b", if_version=1).version == 2
    assert read(team, "root").payload == "b"


def test_a_payload_of_exactly_the_limit_is_accepted(team: Team) -> None:
    payload = "😀" * PAYLOAD_MAX_RUNES
    assert write(team, "big", payload).runes == PAYLOAD_MAX_RUNES
    assert read(team, "big").payload == payload


# --- history ---------------------------------------------------------------------------


def test_history_lists_metadata_newest_first_with_the_total(team: Team) -> None:
    write(team, "ref.notes", "first line\nmore")
    write(team, "ref.notes", "")
    write(team, "ref.notes", "x" * 130 + "\nrest")

    found = history(team, "ref.notes", 50, 0)

    assert found.key == "ref.notes"
    assert found.total_versions == 3
    assert [(v.version, v.runes, v.first_line) for v in found.versions] == [
        (3, 135, "x" * 120),
        (2, 0, ""),
        (1, 15, "first line"),
    ]
    assert not any(hasattr(v, "payload") for v in found.versions)


def test_history_pages_and_keeps_the_total(team: Team) -> None:
    for n in range(5):
        write(team, "k", f"v{n + 1}")
    page = history(team, "k", 2, 1)
    assert [v.version for v in page.versions] == [4, 3]
    assert page.total_versions == 5
    assert history(team, "k", 2, 10).versions == []


def test_history_never_reads_a_payload(team: Team, django_assert_max_num_queries: Any) -> None:
    write(team, "k", "secret payload")
    write(team, "k", "another payload")
    with django_assert_max_num_queries(2) as queries:
        history(team, "k", 50, 0)
    assert queries.captured_queries
    assert not any("payload" in query["sql"] for query in queries.captured_queries)


# --- list_keys -------------------------------------------------------------------------

KEYS = ["root", "must.craft", "must.crafty", "must.craft.traps", "ref.a", "a_b", "axb", "Zed"]


@pytest.fixture
def stocked(team: Team) -> Team:
    for key in KEYS:
        write(team, key, f"payload of {key}")
    write(team, "must.craft", "second version")
    return team


def test_listing_without_a_prefix_gives_every_key_in_code_point_order(stocked: Team) -> None:
    page = list_keys(stocked, "", 50, 0)
    assert [meta.key for meta in page.keys] == sorted(KEYS)
    assert [meta.key for meta in page.keys][0] == "Zed"  # upper case sorts first
    assert page.total == len(KEYS)


def test_a_prefix_is_plain_text_so_a_namespace_ends_with_a_dot(stocked: Team) -> None:
    assert listed(stocked, "must.craft") == ["must.craft", "must.craft.traps", "must.crafty"]
    assert listed(stocked, "must.craft.") == ["must.craft.traps"]
    assert listed(stocked, "must.") == ["must.craft", "must.craft.traps", "must.crafty"]


@pytest.mark.parametrize(("prefix", "expected"), [("a_", ["a_b"]), ("a", ["a_b", "axb"])])
def test_underscore_in_a_prefix_is_a_literal_character(
    stocked: Team, prefix: str, expected: list[str]
) -> None:
    assert listed(stocked, prefix) == expected


@pytest.mark.parametrize("prefix", ["nothing", "must/", "a%", "root ", "ROOT"])
def test_a_prefix_no_key_starts_with_lists_nothing(stocked: Team, prefix: str) -> None:
    page = list_keys(stocked, prefix, 50, 0)
    assert (page.keys, page.total) == ([], 0)


def test_a_listing_carries_each_keys_latest_version(stocked: Team) -> None:
    (meta,) = list_keys(stocked, "must.craft", 1, 0).keys
    assert (meta.key, meta.version, meta.runes) == ("must.craft", 2, len("second version"))


def test_a_page_of_keys_keeps_the_total_of_the_whole_listing(stocked: Team) -> None:
    page = list_keys(stocked, "must.", 2, 1)
    assert [meta.key for meta in page.keys] == ["must.craft.traps", "must.crafty"]
    assert page.total == 3


# --- diff and delete -------------------------------------------------------------------


def test_diff_is_the_unified_diff_between_two_versions(team: Team) -> None:
    write(team, "root", "keep\nold line\n")
    write(team, "root", "keep\nnew line\n")
    found = diff(team, "root", 1, 2)
    assert (found.key, found.old.version, found.new.version) == ("root", 1, 2)
    lines = found.text.splitlines()
    assert lines[:2] == ["--- root@1", "+++ root@2"]
    assert {"-old line", "+new line", " keep"} <= set(lines)
    assert diff(team, "root", 2, 2).text == ""


def test_delete_removes_every_version_and_a_later_write_starts_again_at_one(
    team: Team,
) -> None:
    for n in range(3):
        write(team, "root", f"v{n}")
    write(team, "other", "stays")

    assert delete(team, "root") == 3

    assert not Key.objects.filter(key="root").exists()
    assert not Version.objects.filter(key__key="root").exists()
    assert read(team, "other").payload == "stays"
    with pytest.raises(KeyNotFound):
        read(team, "root")
    assert write(team, "root", "again").version == 1


# --- refusals: each raises its coded error and writes nothing ---------------------------

BAD_KEYS = ["", "a..b", ".a", "a.", "a/b", "a b", "a\\b", "ü", "x" * 257]


@pytest.mark.parametrize("key", BAD_KEYS)
@pytest.mark.parametrize(
    "operation",
    [
        lambda team, key: write(team, key, "payload"),
        lambda team, key: read(team, key),
        lambda team, key: history(team, key, 50, 0),
        lambda team, key: delete(team, key),
    ],
    ids=["write", "read", "history", "delete"],
)
def test_a_malformed_key_is_refused_as_invalid_key(
    team: Team, key: str, operation: Callable[[Team, str], object]
) -> None:
    write(team, "root", "present")
    before = tables()
    with pytest.raises(InvalidKey) as raised:
        operation(team, key)
    assert raised.value.code == "invalid_key"
    assert tables() == before


@pytest.mark.parametrize(
    "operation",
    [
        lambda team: read(team, "missing"),
        lambda team: read(team, "missing", 1),
        lambda team: history(team, "missing", 50, 0),
        lambda team: delete(team, "missing"),
        lambda team: diff(team, "missing", 1, 2),
    ],
    ids=["read", "read-pinned", "history", "delete", "diff"],
)
def test_a_missing_key_is_key_not_found(team: Team, operation: Callable[[Team], object]) -> None:
    write(team, "present", "here")
    before = tables()
    with pytest.raises(KeyNotFound) as raised:
        operation(team)
    assert raised.value.code == "key_not_found"
    assert raised.value.details == {"key": "missing"}
    assert tables() == before


@pytest.mark.parametrize(
    "operation",
    [
        lambda team: read(team, "root", 3),
        lambda team: read(team, "root", 0),
        lambda team: diff(team, "root", 1, 7),
        lambda team: diff(team, "root", 7, 1),
    ],
    ids=["read", "read-zero", "diff-to", "diff-from"],
)
def test_a_missing_version_of_an_existing_key_is_version_not_found(
    team: Team, operation: Callable[[Team], object]
) -> None:
    write(team, "root", "one")
    write(team, "root", "two")
    before = tables()
    with pytest.raises(VersionNotFound) as raised:
        operation(team)
    assert raised.value.code == "version_not_found"
    assert tables() == before


@pytest.mark.parametrize("existing", [False, True], ids=["new-key", "existing-key"])
def test_a_payload_over_the_limit_is_refused_with_the_limit_and_its_size(
    team: Team, existing: bool
) -> None:
    if existing:
        write(team, "root", "small")
    before = tables()
    with pytest.raises(PayloadTooLarge) as raised:
        write(team, "root", "😀" * (PAYLOAD_MAX_RUNES + 1))
    assert raised.value.code == "payload_too_large"
    assert raised.value.details == {"limit": 36_000, "runes": 36_001}
    assert tables() == before


@pytest.mark.parametrize(
    ("writes", "if_version", "current"),
    [(0, 1, 0), (0, 5, 0), (2, 0, 2), (2, 1, 2), (2, 3, 2)],
)
def test_a_stale_if_version_is_a_conflict_that_reports_the_current_version(
    team: Team, writes: int, if_version: int, current: int
) -> None:
    for n in range(writes):
        write(team, "root", f"v{n + 1}")
    before = tables()
    with pytest.raises(VersionConflict) as raised:
        write(team, "root", "late", if_version=if_version)
    assert raised.value.code == "version_conflict"
    assert raised.value.details == {"current_version": current}
    assert tables() == before


def test_every_store_refusal_is_a_store_error() -> None:
    for cls in (InvalidKey, KeyNotFound, VersionNotFound, PayloadTooLarge, VersionConflict):
        assert issubclass(cls, StoreError)


# --- team scoping ----------------------------------------------------------------------


def test_another_teams_key_is_key_not_found(team: Team, other_team: Team) -> None:
    write(team, "root", "ours")
    before = tables()
    for operation in (
        lambda: read(other_team, "root"),
        lambda: read(other_team, "root", 1),
        lambda: history(other_team, "root", 50, 0),
        lambda: diff(other_team, "root", 1, 1),
        lambda: delete(other_team, "root"),
    ):
        with pytest.raises(KeyNotFound):
            operation()
    assert tables() == before
    assert listed(other_team, "") == []


def test_two_teams_keep_independent_versions_of_one_key(team: Team, other_team: Team) -> None:
    write(team, "root", "ours 1")
    write(team, "root", "ours 2")
    assert write(other_team, "root", "theirs").version == 1
    with pytest.raises(VersionConflict) as raised:
        write(other_team, "root", "theirs again", if_version=2)
    assert raised.value.details == {"current_version": 1}
    assert read(team, "root").payload == "ours 2"
    assert read(other_team, "root").payload == "theirs"
    assert delete(other_team, "root") == 1
    assert read(team, "root").version == 2
