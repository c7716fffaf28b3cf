"""Domain errors: a refused operation, named by a stable code (SPEC §8), with no HTTP.

Operations raise these; each caller translates them once: the API maps ``code`` to a
status in one table (``web.api.error_envelope.STATUS_BY_CODE``), pages show ``message`` as a
form error, the MCP server returns the envelope as a tool error.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


class DomainError(Exception):
    """A refused operation. ``code`` is stable; ``details`` join the error envelope."""

    code: str = "error"

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def envelope(self) -> dict[str, Any]:
        """``{"error": {"code", "message", ...details}}``: the one error shape."""
        return error_body(self.code, self.message, **self.details)


class InvalidInput(DomainError):
    """Input that does not validate; ``errors`` lists every problem as ``{loc, message}``.

    Its code is the most specific one the first problem earns (``invalid_kind``,
    ``invalid_background``, ...), else ``invalid_request``.
    """

    def __init__(self, message: str, *, code: str = "invalid_request", **details: Any) -> None:
        super().__init__(message, **details)
        self.code = code


def error_body(code: str, message: str, **details: Any) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, **details}}


# Field paths whose failures earn a more specific code than invalid_request.
SPECIFIC_CODES: Mapping[str, str] = {
    "background": "invalid_background",
    "kind": "invalid_kind",
    "content": "invalid_content",
    "tags": "invalid_tags",
    "label": "invalid_label",
    "supersedes": "invalid_supersedes",
    "valid_until": "invalid_valid_until",
}


# Lists whose items are each validated as a save (SPEC §18.1: routing cases, §3.2): an
# item's field earns the code that field earns in a save, ``cases.3.kind`` as ``kind``.
SAVE_LISTS = frozenset({"cases"})


def specific_code(loc: str) -> str:
    """The code a problem at the dotted path ``loc`` earns (``invalid_request`` unless
    its field has a more specific one)."""
    parts = loc.split(".")
    if len(parts) > 2 and parts[0] in SAVE_LISTS and parts[1].isdigit():
        parts = parts[2:]
    return SPECIFIC_CODES.get(parts[0], "invalid_request")


def invalid_input(problems: Iterable[tuple[str, str]]) -> InvalidInput:
    """One error for a list of ``(loc, message)`` problems (``loc`` is a dotted path)."""
    described = [{"loc": loc or "body", "message": message} for loc, message in problems]
    first = described[0] if described else {"loc": "body", "message": "invalid request"}
    code = specific_code(first["loc"])
    message = f"{first['loc']}: {first['message']}"
    if first["message"] == "Field required":
        message = f"{first['loc']} is required"
    return InvalidInput(message, code=code, errors=described)


def pydantic_problems(errors: Iterable[Mapping[str, Any]], skip: int = 0) -> list[tuple[str, str]]:
    """``(loc, message)`` pairs from pydantic's error dicts, dropping ``skip`` leading
    parts of each location (a framework's own prefix, such as ``("body", "memory")``).
    """
    return [
        (
            ".".join(str(part) for part in list(error.get("loc", ()))[skip:]),
            str(error["msg"]).removeprefix("Value error, "),
        )
        for error in errors
    ]
