"""The key/value store's own route, in front of Django: ``GET`` and ``PUT /api/kv/{key}``,
the calls agents make most, answered from the WSGI environ without Django's request
handling and the Ninja router around them.

In process they were most of a read's time: Django's handler, its middleware chain, the
request signals, URL resolution and Ninja's authentication, parameter and response
models cost about three times the read's one statement (``docs/performance.md``).

This route answers only a request it can answer exactly as the API would, with the same
pieces the API uses: the statement that checks the token and reads the key in one round
trip (``kvstore.store.read_as``); the API's body parser and body model, and the write
that checks the token in its first statement (``store.write_as``); the API's renderer
and error envelope, the HTTPS redirect and headers of Django's ``SecurityMiddleware``,
the input guard, gzip for large answers, every security header, and the log line
Django writes for each refusal (``django.request``). Anything else goes
to Django untouched, which then answers it as always: another method or path, a query
string it does not recognise, a body on a read or one over the limit, no bearer token
at all, a request that would be redirected to HTTPS, an input the guard refuses, a
write's body that the parser or the model refuses, an error from the database during a
read. A token that is not live (unknown or revoked), a missing key or version, and
every outcome of a write once it is tried are answered here, with the envelope and
status the API's error handler writes: a write is never tried twice.

With tracing on (``OTEL_*``) the server does not put this route in front: every request
then goes through Django's instrumentation and gets its span.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable
from typing import Any

from django.conf import settings
from django.core.handlers.wsgi import WSGIRequest
from django.db import close_old_connections
from django.http import HttpResponse
from django.middleware.security import SecurityMiddleware
from django.utils.log import log_response

from kvstore import store
from kvstore.core.keys import key_problem
from lens.core.errors import DomainError
from lens.serving.compression import compress_api_answer
from lens.serving.envelope import from_domain
from lens.serving.middleware import add_security_headers, request_problem
from web.answers.kv_answers import WriteIn, asked_version, value_out, written_out
from web.api.error_envelope import error_response, unauthorized, unexpected
from web.api.parser import JsonParser
from web.api.root import api

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

PREFIX = "/api/kv/"
_PARSER = JsonParser()


def _no_view(request: Any) -> HttpResponse:
    raise AssertionError("only the middleware's request and response halves are used")


class KvFront:
    """A WSGI application: the key/value read and write where it can answer them, ``app``
    (Django) for everything else. ``manage_connections``: close the database connections
    Django would close around a request (off only under the test client, whose
    transaction must survive the request)."""

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
        method = environ.get("REQUEST_METHOD")
        if method not in ("GET", "PUT") or not environ.get("PATH_INFO", "").startswith(PREFIX):
            return None
        if "HTTP_TRANSFER_ENCODING" in environ:
            return None
        length = _length(environ.get("CONTENT_LENGTH", ""))
        if length is None or (method == "GET" and length):
            return None  # Django refuses, or ignores, the body its own way
        token = _bearer(environ.get("HTTP_AUTHORIZATION", ""))
        if not token:
            return None
        # A copy: the request rewrites its environ's path (decoded), which Django would
        # then decode a second time.
        request = WSGIRequest(environ.copy())
        key = request.path_info[len(PREFIX) :]
        if key_problem(key) is not None:
            return None  # also every ``…/history`` and ``…/diff``: a key holds no '/'
        if not self.admitted(request):
            return None
        if self.manage_connections:
            close_old_connections()
        try:
            if method == "GET":
                response = _read(request, token, key)
            else:
                response = _write(request, environ, token, key)
        finally:
            if self.manage_connections:
                close_old_connections()
        if response is None:
            return None
        response = compress_api_answer(request, response)
        add_security_headers(request, response)
        self.security.process_response(request, response)
        if response.status_code >= 400:
            # As Django's handler logs every refusal (``django.request``).
            log_response(
                "%s: %s", response.reason_phrase, request.path, response=response, request=request
            )
        return response, request

    def admitted(self, request: WSGIRequest) -> bool:
        """Whether Django would hand this request to the API's view: no redirect to
        HTTPS, no input the guard refuses. (The API does not check ``Host``: nothing on
        the way to its views asks for it, and nothing it answers is built from it.)"""
        if self.security.process_request(request) is not None:
            return False
        return request_problem(request, with_body=False) is None


def _length(header: str) -> int | None:
    """A body's declared length when the API would read it; None for anything else."""
    if not header:
        return 0
    if not header.isascii() or not header.isdigit():
        return None
    length = int(header)
    return length if length <= settings.API_MAX_BODY_BYTES else None


def _read(request: WSGIRequest, token: str, key: str) -> HttpResponse | None:
    """``read_key``'s answer, or None for Django: a ``version`` the route would refuse
    or read otherwise, or an error from the database (which Django then answers and
    logs; a read can be made twice)."""
    version = asked_version(request.GET.getlist("version"))
    if version is False:
        return None
    try:
        found = store.read_as(token, key, version)
    except Exception:
        return None
    if found is None:
        return error_response(api, request, unauthorized())
    try:
        value = found.value()
    except DomainError as exc:
        return error_response(api, request, from_domain(exc))
    return api.create_response(request, value_out(found.key, value).model_dump(), status=200)


def _write(
    request: WSGIRequest, environ: dict[str, Any], token: str, key: str
) -> HttpResponse | None:
    """``write_key``'s answer. None for Django only before anything is written: a query
    string, a body the parser or ``WriteIn`` refuses (Django then checks the token first
    and refuses either in the API's words). Once the write is tried (``store.write_as``,
    the token's check in its first statement on PostgreSQL), its answer is given here,
    a token that is not live and an unexpected error included, as the API's handler
    gives it: a write is never tried twice."""
    if request.META.get("QUERY_STRING"):
        return None
    body = request.body
    environ["wsgi.input"] = io.BytesIO(body)  # for Django, should it answer after all
    try:
        fields = WriteIn.model_validate(_PARSER.parse_body(request))
    except Exception:
        return None
    try:
        written = store.write_as(token, key, fields.payload, fields.if_version)
    except DomainError as exc:
        return error_response(api, request, from_domain(exc))
    except Exception as exc:
        return error_response(api, request, unexpected(exc))
    if written is None:
        return error_response(api, request, unauthorized())
    status = 201 if written.version == 1 else 200
    return api.create_response(request, written_out(key, written).model_dump(), status=status)


def _bearer(header: str) -> str:
    """The token of ``Authorization: Bearer <token>``, read as Ninja's ``HttpBearer``
    reads it; "" for anything else."""
    parts = header.split(" ")
    return " ".join(parts[1:]) if parts[0].lower() == "bearer" else ""
