"""JSON rendering for the API: times are ISO 8601 UTC with microseconds."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import orjson
from django.http import HttpRequest
from ninja.renderers import JSONRenderer
from ninja.responses import NinjaJSONEncoder


def iso_utc(moment: datetime) -> str:
    """``2026-11-30T07:18:40.527579Z``: always UTC, always microseconds.

    Django's encoder cuts times to milliseconds, which would make one agent's
    sequential saves (microseconds apart) look simultaneous to a client.
    """
    return moment.astimezone(UTC).isoformat(timespec="microseconds").removesuffix("+00:00") + "Z"


class _Encoder(NinjaJSONEncoder):
    def default(self, o: Any) -> Any:
        if isinstance(o, datetime):
            return iso_utc(o)
        return super().default(o)


# orjson writes times itself and leaves out microseconds that are zero, so times (and
# dates, which the flag passes along with them) go to the encoder's ``default`` as with
# the standard library; so do dataclasses, which Ninja's encoder refuses.
_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
_default = _Encoder().default


class ApiRenderer(JSONRenderer):
    """orjson where it can write the answer (several times faster on a large
    composition), the standard encoder where it cannot.

    orjson writes UTF-8 instead of ``\\u`` escapes and no spaces between items; the JSON
    is the same. What it refuses falls back to the standard encoder, which writes it
    as before: integers beyond 64 bits, strings holding lone surrogates, object keys
    that are not strings. Two differences are left, in values no answer holds: a float
    that is not finite is ``null`` here, where the standard encoder wrote ``NaN`` (not
    JSON), and a plain ``Enum`` member is its value, where Ninja's encoder wrote its
    ``str()`` (string and integer enums, such as Django's choices, read the same).
    """

    encoder_class = _Encoder

    def render(self, request: HttpRequest, data: Any, *, response_status: int) -> Any:
        try:
            return orjson.dumps(data, default=_default, option=_OPTIONS)
        except orjson.JSONEncodeError:
            return super().render(request, data, response_status=response_status)
