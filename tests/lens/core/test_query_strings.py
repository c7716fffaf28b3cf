"""Query strings leave the process without their values (``lens/core/query_strings.py``)."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lens.core.query_strings import REDACTED, SAFE_NAME, redact_query, redact_url


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("q=plum+pudding&limit=5", "q=REDACTED&limit=REDACTED"),
        ("message=What%20do%20I%20like%3F", "message=REDACTED"),
        ("as_of=2026-01-01T00:00:00Z", "as_of=REDACTED"),
        ("flag", "flag"),
        ("some%20words", REDACTED),
        ("a=1&&b=", "a=REDACTED&&b=REDACTED"),
        ("=orphan", REDACTED),
        ("", ""),
    ],
)
def test_values_go_and_names_stay(query: str, expected: str) -> None:
    assert redact_query(query) == expected


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (
            "http://h:1/api/agents/wren/recall?message=secret",
            "http://h:1/api/agents/wren/recall?message=REDACTED",
        ),
        (
            "/api/agents/wren/memories?q=x&limit=2",
            "/api/agents/wren/memories?q=REDACTED&limit=REDACTED",
        ),
        ("/healthz", "/healthz"),
        ("/page#secret", "/page"),
        ("/page?", "/page?"),
    ],
)
def test_urls_and_targets_keep_their_path(url: str, expected: str) -> None:
    assert redact_url(url) == expected


@given(st.dictionaries(st.from_regex(SAFE_NAME, fullmatch=True), st.text(min_size=1), max_size=5))
def test_no_value_survives_and_every_name_does(params: dict[str, str]) -> None:
    redacted = redact_query(urlencode(params))
    for part in filter(None, redacted.split("&")):
        assert part.partition("=")[2] in ("", REDACTED)
    assert [p.partition("=")[0] for p in filter(None, redacted.split("&"))] == list(params)


@given(st.text())
def test_whatever_comes_in_only_names_and_the_marker_go_out(query: str) -> None:
    for part in filter(None, redact_query(query).split("&")):
        name, equals, value = part.partition("=")
        assert part == REDACTED or (SAFE_NAME.fullmatch(name) and value in ("", REDACTED))
        assert not equals or value == REDACTED
