"""JSON rendering for the API: times are ISO 8601 UTC with microseconds."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

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


class ApiRenderer(JSONRenderer):
    encoder_class = _Encoder
