"""The API's one error shape: ``{"error": {"code", "message", ...details}}``."""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError

logger = logging.getLogger(__name__)

_CODES_BY_STATUS = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    422: "invalid_request",
}


class ApiError(Exception):
    """Raise anywhere under the API to answer with the error envelope."""

    def __init__(self, status: int, code: str, message: str, **details: Any) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = details


def error_body(code: str, message: str, **details: Any) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, **details}}


def body_too_large(limit: int) -> ApiError:
    return ApiError(
        413,
        "payload_too_large",
        f"Request bodies are limited to {limit} bytes.",
        limit=limit,
    )


def _loc_text(loc: list[Any]) -> str:
    # ninja prefixes "body" and the parameter name; a reader wants the field path.
    parts = [str(part) for part in loc]
    if parts[:1] == ["body"]:
        parts = parts[2:]
    return ".".join(parts) or "body"


def _clean_msg(msg: str) -> str:
    return msg.removeprefix("Value error, ")


# Field paths whose failures earn a more specific code than invalid_request.
SPECIFIC_CODES: dict[str, str] = {
    "background": "invalid_background",
    "kind": "invalid_kind",
    "content": "invalid_content",
    "tags": "invalid_tags",
    "label": "invalid_label",
    "supersedes": "invalid_supersedes",
}


def validation_error(errors: list[dict[str, Any]]) -> ApiError:
    described = [
        {"loc": _loc_text(list(error.get("loc", []))), "message": _clean_msg(error["msg"])}
        for error in errors
    ]
    first = described[0] if described else {"loc": "body", "message": "invalid request"}
    code = SPECIFIC_CODES.get(first["loc"].split(".")[0], "invalid_request")
    message = f"{first['loc']}: {first['message']}"
    if first["message"] == "Field required":
        message = f"{first['loc']} is required"
    return ApiError(422, code, message, errors=described)


def install(api: NinjaAPI) -> None:
    def respond(request: HttpRequest, error: ApiError) -> HttpResponse:
        response = api.create_response(
            request, error_body(error.code, error.message, **error.details), status=error.status
        )
        if error.status == 401:
            response["WWW-Authenticate"] = "Bearer"
        return response

    def on_api_error(request: HttpRequest, exc: ApiError) -> HttpResponse:
        return respond(request, exc)

    def on_validation(request: HttpRequest, exc: ValidationError) -> HttpResponse:
        return respond(request, validation_error(list(exc.errors)))

    def on_auth(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
        return respond(
            request,
            ApiError(401, "unauthorized", "A valid 'Authorization: Bearer <token>' is required."),
        )

    def on_http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
        cause = exc.__cause__
        if isinstance(cause, ApiError):
            return respond(request, cause)
        if isinstance(cause, RequestDataTooBig):
            return respond(request, body_too_large(api_max_body()))
        if exc.status_code == 400:
            # ninja raises 400 only when the body cannot be parsed at all.
            return respond(
                request, ApiError(422, "invalid_request", "Request body is not valid JSON.")
            )
        code = _CODES_BY_STATUS.get(exc.status_code, "error")
        return respond(request, ApiError(exc.status_code, code, str(exc.message)))

    def on_404(request: HttpRequest, exc: Http404) -> HttpResponse:
        return respond(request, ApiError(404, "not_found", "Not found."))

    def on_unexpected(request: HttpRequest, exc: Exception) -> HttpResponse:
        logger.exception("unhandled API error", exc_info=exc)
        return respond(request, ApiError(500, "internal_error", "An unexpected error occurred."))

    api.add_exception_handler(ApiError, on_api_error)
    api.add_exception_handler(ValidationError, on_validation)
    api.add_exception_handler(AuthenticationError, on_auth)
    api.add_exception_handler(HttpError, on_http_error)
    api.add_exception_handler(Http404, on_404)
    api.add_exception_handler(Exception, on_unexpected)


def api_max_body() -> int:
    from django.conf import settings

    return int(settings.API_MAX_BODY_BYTES)
