"""ASGI entry point."""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

from lens.serving.runtime import prepare_process
from lens.serving.telemetry import start_tracing

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lens.settings")
# Under ASGI each request's synchronous code runs on a thread of its own, so a connection
# kept for the next request is never used again: persistent connections would leave one
# open connection behind per request. A new connection per request, as Django advises
# for ASGI (the production server, make serve, is WSGI and keeps its connections).
os.environ.setdefault("DB_CONN_MAX_AGE", "0")

# Traces when the OTEL_* variables ask for them: before the handler loads its middleware.
start_tracing()
application = get_asgi_application()
prepare_process()
