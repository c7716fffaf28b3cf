"""What the production server (``lens/serving/server.py``) runs: Django's WSGI handler behind
the proxy check (``X-Forwarded-*`` only from ``FORWARDED_ALLOW_IPS``), served through
ASGI with each request's body read before a thread is taken (``lens/serving/buffered.py``).

In front of Django sits ``settings.API_FRONT``: the key/value store's own route
(``web.api.kv_front``), which answers what it can answer exactly as the API does
and hands everything else to Django. It is named in the settings, as middleware is,
because it belongs to the web layer that this module does not import. With tracing on
it is left out, so that every request has its span."""

from __future__ import annotations

import os

from django.conf import settings
from django.core.wsgi import get_wsgi_application
from django.utils.module_loading import import_string

from lens.envconf import env_bool, env_int, env_list
from lens.serving.buffered import BufferedWsgi
from lens.serving.forwarded import TrustedProxies, behind_proxy
from lens.serving.runtime import prepare_process, request_threads
from lens.serving.telemetry import start_tracing

# Django's WSGI handler, as lens/wsgi.py builds it for other WSGI servers.
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lens.settings")
# Traces when the OTEL_* variables ask for them: before the handler loads its middleware.
tracing = start_tracing()
django_application = get_wsgi_application()
prepare_process()
served = (
    django_application
    if tracing or not settings.API_FRONT
    else import_string(settings.API_FRONT)(django_application)
)

# A request's body must arrive whole within this many seconds (1 MiB at 40 KB/s).
BODY_SECONDS = env_int("REQUEST_BODY_TIMEOUT", 30, minimum=1)

application = BufferedWsgi(
    behind_proxy(
        served,
        TrustedProxies(env_list("FORWARDED_ALLOW_IPS", ["127.0.0.1", "::1"])),
    ),
    threads=request_threads(),
    # Costly calls past their team's share wait for a turn on the event loop
    # (settings.REQUEST_TURNS: the web layer's, named as API_FRONT is).
    turns=import_string(settings.REQUEST_TURNS) if settings.REQUEST_TURNS else None,
    max_body=settings.API_MAX_BODY_BYTES,
    body_seconds=BODY_SECONDS,
    # One line per request on stdout: who, what, the status and how long it took.
    access_log=env_bool("ACCESS_LOG", default=True),
)
