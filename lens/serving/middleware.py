"""Request-level guards: the API's body size before anything reads it and the error
envelope for answers no endpoint produced (unknown paths, wrong methods); unstorable
text refused once for every input channel; the security headers of every answer.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable
from typing import cast

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.core.handlers.base import BaseHandler
from django.core.handlers.exception import convert_exception_to_response, get_exception_response
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.template import loader
from django.urls import get_resolver, get_urlconf
from django.utils.cache import patch_cache_control

from lens.audit import acting_for
from lens.core.errors import error_body, invalid_input
from lens.core.raw_input import Problem, form_problem, multipart_problem, path_problem
from lens.core.text import unstorable
from lens.serving.envelope import body_too_large, from_domain

_FALLBACK_ERRORS = {
    404: ("not_found", "No such API endpoint."),
    405: ("method_not_allowed", "This endpoint does not accept that method."),
}


API_PREFIX = "/api/"


def is_api(request: HttpRequest) -> bool:
    return request.path_info.startswith(API_PREFIX)


class ApiMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not is_api(request):
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


class InputGuardMiddleware:
    """Refuses NUL and text that is not UTF-8 (where lone surrogates hide) in the path,
    the query string, the headers, the cookies and page form bodies, before any view,
    session lookup or database sees them (SPEC §8): the API answers 422 with the error
    envelope, pages the 400 page. Nothing is stored, on any database (PostgreSQL would
    refuse NUL with a server error; SQLite would keep it).

    API bodies are JSON whatever their Content-Type, so the API's JSON parser checks
    them (``web.api.root``); page forms are checked here, on their raw bytes.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        api = is_api(request)
        problem = request_problem(request, with_body=not api)
        if problem is None:
            return self.get_response(request)
        if api:
            error = from_domain(invalid_input([problem]))
            return JsonResponse(
                error_body(error.code, error.message, **error.details), status=error.status
            )
        # Rendered without the request, as Django renders its 400 page: the session and
        # the user are never looked up with a cookie that failed the check.
        page = loader.get_template("400.html").render({"problem": problem_sentence(*problem)})
        return HttpResponseBadRequest(page)


_PLACES = {
    "query": "A parameter of the address",
    "form": "A field of the form",
    "header": "A header of the request",
    "cookie": "A cookie",
}


def problem_sentence(where: str, why: str) -> str:
    """``("query.q", "text must not contain NUL ...")`` as a sentence for a person."""
    channel, _, name = where.partition(".")
    place = "The address" if channel == "path" else _PLACES.get(channel, "The request")
    if name:
        place = f"{place}, “{name}”,"
    return f"{place} was refused: {why}."


def request_problem(request: HttpRequest, *, with_body: bool) -> Problem | None:
    """The first input of ``request`` that cannot be stored, as (where, why), or None."""
    if (why := path_problem(request.path_info)) is not None:
        return "path", why
    query = _wire_bytes(request.META.get("QUERY_STRING", ""))
    if query and (found := form_problem(query, "query")) is not None:
        return found
    for name, value in request.META.items():
        header = name.startswith("HTTP_") or name == "CONTENT_TYPE"
        if header and isinstance(value, str) and (why := unstorable(value)) is not None:
            return f"header.{name.removeprefix('HTTP_').lower().replace('_', '-')}", why
    for name, value in request.COOKIES.items():
        # A quoted cookie value may spell NUL as the escape \000.
        if (why := unstorable(name) or unstorable(value)) is not None:
            return f"cookie.{name}", why
    return _body_problem(request) if with_body and request.method == "POST" else None


def _wire_bytes(value: str) -> bytes:
    # WSGI hands raw bytes over as Latin-1 text; other servers may hand decoded text.
    try:
        return value.encode("iso-8859-1")
    except UnicodeEncodeError:
        return value.encode("utf-8", "surrogatepass")


def _body_problem(request: HttpRequest) -> Problem | None:
    content_type = request.content_type or ""
    params = request.content_params or {}
    charset = params.get("charset") or "utf-8"
    try:
        codecs.lookup(charset)
    except LookupError:
        charset = "utf-8"  # Django decodes with its default charset then, too
    if content_type == "application/x-www-form-urlencoded":
        return form_problem(request.body, "form", charset)
    if content_type == "multipart/form-data":
        boundary = params.get("boundary", "")
        if boundary:
            return multipart_problem(request.body, boundary.encode("ascii", "replace"), charset)
    return None


class _Views(BaseHandler):
    """Django's request handling with no middleware of its own: resolve the URL, call
    the view, turn an exception into its error answer. It is what ``load_middleware``
    builds for an empty ``MIDDLEWARE``, without touching the settings."""

    def __init__(self) -> None:
        self._view_middleware: list[Callable[..., HttpResponse | None]] = []
        self._template_response_middleware: list[Callable[..., HttpResponse]] = []
        self._exception_middleware: list[Callable[..., HttpResponse | None]] = []
        # _get_response is Django's own (load_middleware wraps it the same way); the
        # stubs leave private methods out.
        view = self._get_response  # type: ignore[attr-defined]  # private, not in the stubs
        self._chain = convert_exception_to_response(view)

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return cast(HttpResponse, self._chain(request))


class ApiBypassMiddleware:
    """The fork between the API and the pages: API requests go from here straight to
    their view; everything listed after this middleware serves pages only.

    An API call authenticates with its bearer token and answers JSON, so sessions, the
    signed-in user, CSRF (no cookie authenticates it), messages, htmx and the trailing-
    slash redirect have nothing to do for it; they cost more than the key/value read
    behind them. What the API does need (security headers, the body limit and the error
    envelope, the input guard) runs before this point, for both.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.api_views = _Views()

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if is_api(request):
            return self.api_views(request)
        return self.get_response(request)


class RefusalMiddleware:
    """A page's ``PermissionDenied`` (a person without the role or permission an action
    needs: publishing, restoring, reordering, …) answered with the 403 page here, before
    Django's exception handling would: that logs the refusal as a warning with the
    exception's traceback, as if something had failed. Answered here, the refusal is
    logged as every other 4xx answer is, once and in one line by ``django.request``
    (``Forbidden: /proposals/7/publish/``). The page is the same: Django's own 403
    handler renders it, with the exception's message.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, PermissionDenied):
            return None
        resolver = get_resolver(get_urlconf())
        return get_exception_response(request, resolver, 403, exception)


# No inline script or style anywhere (templates use static files only; htmx is told not
# to inject its indicator style); no eval; nothing framed; forms post to this site only.
CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "font-src 'self'",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
        "form-action 'self'",
    ]
)

SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}


class SecurityHeadersMiddleware:
    """Every answer carries the security headers (SPEC §13), whatever produced it (a view,
    an error page, a static file); a header a view set itself is kept.

    Answers to a signed-in person are ``Cache-Control: private, no-store``: no browser or
    proxy keeps a copy of their pages after they log out. Static files are served before
    anyone is signed in (WhiteNoise answers first) and keep their long cache lifetimes.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        add_security_headers(request, response)
        return response


def add_security_headers(request: HttpRequest, response: HttpResponse) -> None:
    """What ``SecurityHeadersMiddleware`` adds to an answer (the key/value read's own
    route, ``web.api.kv_front``, adds it too)."""
    for header, value in SECURITY_HEADERS.items():
        if header not in response:
            response[header] = value
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        patch_cache_control(response, private=True, no_store=True)


class ActingPersonMiddleware:
    """Who acts, for the audit events of changes made through Django's own forms (the
    admin's inlines): the signed-in person of this request (``lens.audit.acting_label``)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        with acting_for(request):
            return self.get_response(request)
