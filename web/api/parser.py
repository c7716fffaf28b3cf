"""The API's body parser: JSON objects with no repeated key and nothing a database
could not store, or the §8 error envelope."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja.parser import Parser

from lens.core import nesting
from lens.core.text import unstorable_path
from lens.serving.envelope import ApiError
from web.api import error_envelope


class _DuplicateKey(Exception):
    """A JSON object named the same key twice (``args``: the key)."""


def _refuse_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # json.loads would keep the last value silently; the contract refuses the body.
    data = dict(pairs)
    if len(data) != len(pairs):
        seen: set[str] = set()
        for key, _value in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return data


class JsonParser(Parser):
    def parse_body(self, request: HttpRequest) -> Any:
        if not request.body.strip():
            # No body is an empty object: a bare ``curl -X POST`` of an endpoint whose
            # fields are all optional works; required fields are then reported missing.
            return {}
        try:
            data = nesting.loads(request.body, object_pairs_hook=_refuse_duplicates)
        except nesting.TooDeep as exc:
            raise ApiError(422, "invalid_request", f"Request body {exc}.") from None
        except _DuplicateKey as exc:
            loc = ("body", "", *exc.args)
            raise error_envelope.validation_error(
                [{"loc": loc, "msg": "duplicate key in a JSON object"}]
            ) from None
        except ValueError as exc:
            raise ApiError(
                422, "invalid_request", f"Request body is not valid JSON: {exc}"
            ) from exc
        # Refused on every backend alike (SQLite would store it, PostgreSQL would fail).
        if (found := unstorable_path(data)) is not None:
            path, why = found
            # validation_error strips ninja's ("body", <parameter>) prefix from a loc.
            loc = ("body", "", *path)
            raise error_envelope.validation_error([{"loc": loc, "msg": why}])
        return data
