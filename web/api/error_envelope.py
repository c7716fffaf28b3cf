"""The API's one error shape, ``{"error": {"code", "message", ...details}}``, for
every error ninja or a view raises (the statuses are ``lens/serving/envelope.py``'s)."""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError

from lens.core.errors import DomainError, error_body, invalid_input, pydantic_problems
from lens.serving.envelope import ApiError, body_too_large, from_domain

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


def validation_error(errors: list[dict[str, Any]]) -> ApiError:
    """ninja's validation errors as the envelope. Body locations start with ``body`` and
    the parameter name, which a reader does not need.
    """
    problems = [
        problem
        for error in errors
        for problem in pydantic_problems([error], skip=2 if _in_body(error) else 0)
    ]
    return from_domain(invalid_input(problems))


def _in_body(error: dict[str, Any]) -> bool:
    return list(error.get("loc", ()))[:1] == ["body"]


def error_response(api: NinjaAPI, request: HttpRequest, error: ApiError) -> HttpResponse:
    """``error`` as ``api`` answers it: the envelope, the scheme a 401 asks for, and when
    to ask again for a 429 (``retry_after``, also in the envelope)."""
    response = api.create_response(
        request, error_body(error.code, error.message, **error.details), status=error.status
    )
    if error.status == 401:
        response["WWW-Authenticate"] = "Bearer"
    if error.status == 429 and "retry_after" in error.details:
        response["Retry-After"] = str(error.details["retry_after"])
    return response


def unauthorized() -> ApiError:
    """The answer to a request without a live token."""
    return ApiError(401, "unauthorized", "A valid 'Authorization: Bearer <token>' is required.")


def install(api: NinjaAPI) -> None:
    def respond(request: HttpRequest, error: ApiError) -> HttpResponse:
        return error_response(api, request, error)

    # Registered with ninja's decorator: ``add_exception_handler`` is typed as if a
    # handler could be passed the exception class, which none of these expects.
    @api.exception_handler(ApiError)
    def on_api_error(request: HttpRequest, exc: ApiError) -> HttpResponse:
        return respond(request, exc)

    @api.exception_handler(DomainError)
    def on_domain_error(request: HttpRequest, exc: DomainError) -> HttpResponse:
        return respond(request, from_domain(exc))

    @api.exception_handler(ValidationError)
    def on_validation(request: HttpRequest, exc: ValidationError) -> HttpResponse:
        return respond(request, validation_error(list(exc.errors)))

    @api.exception_handler(AuthenticationError)
    def on_auth(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
        return respond(request, unauthorized())

    @api.exception_handler(HttpError)
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

    @api.exception_handler(Http404)
    def on_404(request: HttpRequest, exc: Http404) -> HttpResponse:
        return respond(request, ApiError(404, "not_found", "Not found."))

    @api.exception_handler(Exception)
    def on_unexpected(request: HttpRequest, exc: Exception) -> HttpResponse:
        return respond(request, unexpected(exc))


def unexpected(exc: Exception) -> ApiError:
    """The answer to an error no handler expected, logged with its traceback."""
    logger.exception("unhandled API error", exc_info=exc)
    return ApiError(500, "internal_error", "An unexpected error occurred.")


def api_max_body() -> int:
    from django.conf import settings

    return int(settings.API_MAX_BODY_BYTES)
