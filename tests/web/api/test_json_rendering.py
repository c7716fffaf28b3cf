"""The API's JSON renderer (web/api/rendering.py): orjson where it can, the same JSON as the
standard-library encoder it replaced, and times always ISO 8601 UTC with microseconds.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from tests.samples import GRINNING
from web.api.rendering import ApiRenderer

renderer = ApiRenderer()


def render(data: Any) -> bytes | str:
    # orjson's bytes, or the standard encoder's text when orjson refuses the data.
    rendered: bytes | str = renderer.render(
        None,  # type: ignore[arg-type]  # the renderer never reads the request
        data,
        response_status=200,
    )
    return rendered


def standard(data: Any) -> str:
    """What the renderer wrote before orjson: the standard library with its encoder."""
    return json.dumps(data, cls=ApiRenderer.encoder_class)


class Stamp(BaseModel):
    at: datetime
    note: str


@pytest.mark.parametrize(
    ("moment", "written"),
    [
        (datetime(2026, 11, 30, 7, 18, 40, 527579, tzinfo=UTC), "2026-11-30T07:18:40.527579Z"),
        # orjson leaves out zero microseconds; the API never does.
        (datetime(2026, 11, 30, 7, 18, 40, tzinfo=UTC), "2026-11-30T07:18:40.000000Z"),
        (
            datetime(2026, 11, 30, 9, 18, 40, 5, tzinfo=timezone(timedelta(hours=2))),
            "2026-11-30T07:18:40.000005Z",
        ),
    ],
)
def test_times_are_utc_with_microseconds_and_a_z(moment: datetime, written: str) -> None:
    assert json.loads(render({"at": moment})) == {"at": written}
    assert json.loads(render([Stamp(at=moment, note="n")])) == [{"at": written, "note": "n"}]
    assert json.loads(render({"at": moment})) == json.loads(standard({"at": moment}))


def test_non_ascii_is_utf_8_and_reads_the_same() -> None:
    data = {"text": f'zażółć {GRINNING} 日本語 \u2028 \x00 "q" \\', "ключ": "значение"}

    written = render(data)

    assert isinstance(written, bytes)
    assert json.loads(written.decode("utf-8")) == data == json.loads(standard(data))


@pytest.mark.parametrize(
    "data",
    [
        {"big": 2**64},  # beyond 64 bits: orjson refuses it
        {"small": -(2**70)},
        {"lone": "\ud800"},  # a lone surrogate: not UTF-8
        {1: "integer key"},
    ],
    ids=["big-int", "big-negative-int", "lone-surrogate", "integer-key"],
)
def test_what_orjson_refuses_is_written_by_the_standard_encoder(data: Any) -> None:
    assert render(data) == standard(data)


def test_other_types_are_written_as_the_standard_encoder_writes_them() -> None:
    @dataclass
    class Point:
        x: int

    data = {
        "day": date(2026, 1, 2),
        "amount": Decimal("1.10"),
        "id": uuid.UUID("12345678-1234-5678-1234-567812345678"),
        "model": Stamp(at=datetime(2026, 1, 2, tzinfo=UTC), note="ok"),
        "span": timedelta(seconds=90),
    }
    assert json.loads(render(data)) == json.loads(standard(data))
    with pytest.raises(TypeError):
        render({"point": Point(1)})  # refused by both, as before
    with pytest.raises(TypeError):
        standard({"point": Point(1)})


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
    | st.datetimes(timezones=st.just(UTC)),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


@given(json_values)
def test_any_answer_parses_equal_to_the_standard_encoders(data: Any) -> None:
    assert json.loads(render(data)) == json.loads(standard(data))


@pytest.mark.django_db
def test_the_api_documents_still_render(anon_api: Any) -> None:
    schema = anon_api.get("/api/openapi.json")
    assert schema.status_code == 200
    assert "/api/agents/{slug}/composition" in schema.json()["paths"]
    docs = anon_api.get("/api/docs")
    assert docs.status_code == 200
    assert b"openapi.json" in docs.content
