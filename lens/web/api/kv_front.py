"""The key/value read's own route, in front of Django: ``GET /api/kv/{key}``, the call
agents make most, answered from the WSGI environ without Django's request handling and
the Ninja router around it.

In process they were most of a read's time: Django's handler, its middleware chain, the
request signals, URL resolution and Ninja's authentication, parameter and response
models cost about three times the read's one statement (``docs/performance.md``).

This route answers only a request it can answer exactly as the API would, with the same
pieces the API uses: the statement that checks the token and reads the key in one round
trip (``kvstore.store.read_as``), the API's renderer and error envelope, the HTTPS
redirect and headers of Django's ``SecurityMiddleware``, the input guard, gzip for large
answers and every security header. Anything else goes to Django untouched, which then
answers it as always: another method or path, a query string it does not recognise, a
body, no bearer token at all, a request that would be redirected to HTTPS, an input the guard refuses, an error from the database. A token that is not live
(unknown or revoked), a missing key and a missing version are answered here, with the
envelope and status the API's error handler writes (agents ask for keys that are not
there yet; a refused token is told in the same one statement).

With tracing on (``OTEL_*``) the server does not put this route in front: every request
then goes through Django's instrumentation and gets its span.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django.core.handlers.wsgi import WSGIRequest
from django.db import close_old_connections
from django.http import HttpResponse
from django.middleware.security import SecurityMiddleware

from kvstore import store
from kvstore.core.keys import key_problem
from lens.core.errors import DomainError
from lens.serving.compression import compress_api_answer
from lens.serving.envelope import from_domain
from lens.serving.middleware import add_security_headers, request_problem
from lens.web.api.errors import error_response, unauthorized
from lens.web.api.kv_routes import asked_version, value_out
from lens.web.api.root import api

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

PREFIX = "/api/kv/"


def _no_view(request: Any) -> HttpResponse:
    raise AssertionError("only the middleware's request and response halves are used")


class KvReadFront:
    """A WSGI application: the key/value read where it can answer it, ``app`` (Django)
    for everything else. ``manage_connections``: close the database connections Django
    would close around a request (off only under the test client, whose transaction
    must survive the request)."""

    def __init__(self, app: WsgiApp, *, manage_connections: bool = True) -> None:
        self.app = app
        self.manage_connections = manage_connections
        # Django's own middleware, for its two halves: the HTTPS redirect (a request it
        # would redirect is left to Django) and the headers it adds to every answer. Made
        # here, as Django's handler makes its chain: it reads the settings once.
        self.security = SecurityMiddleware(_no_view)

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        answered = self.answer(environ)
        if answered is None:
            return self.app(environ, start_response)
        response, _request = answered
        # What Django's WSGIHandler hands the server (no cookies: the API sets none).
        start_response(f"{response.status_code} {response.reason_phrase}", list(response.items()))
        return [response.content]

    def answer(self, environ: dict[str, Any]) -> tuple[HttpResponse, WSGIRequest] | None:
        """The answer and the request it was made from, or None: Django answers."""
        if environ.get("REQUEST_METHOD") != "GET":
            return None
        if not environ.get("PATH_INFO", "").startswith(PREFIX):
            return None
        if environ.get("CONTENT_LENGTH", "") not in ("", "0"):
            return None  # Django refuses or ignores a body its own way
        if "HTTP_TRANSFER_ENCODING" in environ:
            return None
        token = _bearer(environ.get("HTTP_AUTHORIZATION", ""))
        if not token:
            return None
        # A copy: the request rewrites its environ's path (decoded), which Django would
        # then decode a second time.
        request = WSGIRequest(environ.copy())
        key = request.path_info[len(PREFIX) :]
        if key_problem(key) is not None:
            return None  # also every ``…/history`` and ``…/diff``: a key holds no '/'
        version = asked_version(request.GET.getlist("version"))
        if version is False or not self.admitted(request):
            return None
        if self.manage_connections:
            close_old_connections()
        try:
            response = _read_answer(request, store.read_as(token, key, version))
        except Exception:
            return None  # Django answers (and logs) whatever went wrong
        finally:
            if self.manage_connections:
                close_old_connections()
        response = compress_api_answer(request, response)
        add_security_headers(request, response)
        self.security.process_response(request, response)
        return response, request

    def admitted(self, request: WSGIRequest) -> bool:
        """Whether Django would hand this request to the API's view: no redirect to
        HTTPS, no input the guard refuses. (The API does not check ``Host``: nothing on
        the way to its views asks for it, and nothing it answers is built from it.)"""
        if self.security.process_request(request) is not None:
            return False
        return request_problem(request, with_body=False) is None


def _bearer(header: str) -> str:
    """The token of ``Authorization: Bearer <token>``, read as Ninja's ``HttpBearer``
    reads it; "" for anything else."""
    parts = header.split(" ")
    return " ".join(parts[1:]) if parts[0].lower() == "bearer" else ""


def _read_answer(request: WSGIRequest, found: store.ReadAs | None) -> HttpResponse:
    """The read's answer as the API's route and error handler write it."""
    if found is None:
        return error_response(api, request, unauthorized())
    try:
        value = found.value()
    except DomainError as exc:
        return error_response(api, request, from_domain(exc))
    return api.create_response(request, value_out(found.key, value).model_dump(), status=200)
