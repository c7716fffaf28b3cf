"""Request-level guards for the API: body size before anything reads it, and the error
envelope for answers no endpoint produced (unknown paths, wrong methods).
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse

from lens.apierrors import body_too_large, error_body

_FALLBACK_ERRORS = {
    404: ("not_found", "No such API endpoint."),
    405: ("method_not_allowed", "This endpoint does not accept that method."),
}


class ApiMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not request.path.startswith("/api/"):
            return self.get_response(request)
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        limit = settings.API_MAX_BODY_BYTES
        if length > limit:
            error = body_too_large(limit)
            return JsonResponse(error_body(error.code, error.message, **error.details), status=413)
        response = self.get_response(request)
        fallback = _FALLBACK_ERRORS.get(response.status_code)
        if fallback and not response.get("Content-Type", "").startswith("application/json"):
            code, message = fallback
            replaced = JsonResponse(error_body(code, message), status=response.status_code)
            if "Allow" in response:
                replaced["Allow"] = response["Allow"]
            return replaced
        return response
