"""Request-level guards that must run before any view reads the body."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse

from lens.apierrors import body_too_large, error_body


class ApiBodyLimitMiddleware:
    """Refuse API bodies over the limit with 413 before anything buffers them."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path.startswith("/api/"):
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                length = 0
            limit = settings.API_MAX_BODY_BYTES
            if length > limit:
                error = body_too_large(limit)
                return JsonResponse(
                    error_body(error.code, error.message, **error.details), status=413
                )
        return self.get_response(request)
