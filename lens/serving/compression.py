"""gzip for the API's large JSON answers, when the client accepts it.

Only answers under ``/api/`` whose type is JSON are compressed. Pages are left alone
on purpose: they carry CSRF tokens next to text a visitor can influence, which is what
BREACH reads from compressed sizes. API answers carry no such secret, and the API is
called with a bearer token that a browser never adds by itself, so a third-party page
cannot make a signed-in browser fetch them either.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.utils.cache import patch_vary_headers

from lens.serving.middleware import is_api

# Below this many bytes an answer fits in a few TCP segments and compressing saves
# nothing a client would notice.
MIN_BYTES = 4096
# Level 1, measured on a 462 KB composition (40 sections, 2,000 entries, 1,000
# memories): 40.4 KB in about 1 ms; level 6 makes 36.2 KB in about 2.5 ms and level 9
# 34.9 KB in 5 ms. A tenth less on the wire is not worth twice the server time.
LEVEL = 1
# zlib writes a gzip member (header and trailer) with this window size.
_GZIP_WBITS = 16 + zlib.MAX_WBITS


def accepts_gzip(header: str) -> bool:
    """Whether an ``Accept-Encoding`` value allows gzip: named with a non-zero weight,
    or not named and ``*`` allowed (RFC 9110 §12.5.3)."""
    weights: dict[str, float] = {}
    for item in header.split(","):
        coding, _, params = item.partition(";")
        weight = 1.0
        for param in params.split(";"):
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    weight = float(value.strip())
                except ValueError:
                    weight = 0.0
        coding = coding.strip().lower()
        # RFC 9110 §8.4.1.3: x-gzip is another name for gzip.
        weights["gzip" if coding == "x-gzip" else coding] = weight
    if "gzip" in weights:
        return weights["gzip"] > 0
    return weights.get("*", 0) > 0


class ApiCompressionMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return compress_api_answer(request, self.get_response(request))


def compress_api_answer(request: HttpRequest, response: HttpResponse) -> HttpResponse:
    """``response`` gzipped when it is a large API answer and the client accepts gzip
    (the key/value read's own route, ``web.api.kv_front``, calls this too)."""
    if not is_api(request) or not _compressible(response):
        return response
    # The answer differs with the header from here on, whether or not this client
    # accepts gzip: a shared cache must key on it.
    patch_vary_headers(response, ("Accept-Encoding",))
    if not accepts_gzip(request.headers.get("Accept-Encoding", "")):
        return response
    packed = zlib.compress(response.content, LEVEL, _GZIP_WBITS)
    if len(packed) >= len(response.content):
        return response
    response.content = packed
    response.headers["Content-Length"] = str(len(packed))
    response.headers["Content-Encoding"] = "gzip"
    etag = response.get("ETag")
    if etag and etag.startswith('"'):
        # A strong validator names these exact bytes, which just changed.
        response.headers["ETag"] = "W/" + etag
    return response


def _compressible(response: HttpResponse) -> bool:
    return (
        not response.streaming
        and not response.has_header("Content-Encoding")
        and response.get("Content-Type", "").startswith("application/json")
        and len(response.content) >= MIN_BYTES
    )
