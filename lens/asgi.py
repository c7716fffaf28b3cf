"""ASGI entry point."""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

from lens.serving.runtime import prepare_process

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lens.settings")
# Under ASGI each request's synchronous code runs on a thread of its own, so a connection
# kept for the next request is never used again: persistent connections would leave one
# open connection behind per request. A new connection per request, as Django advises
# for ASGI (the production server, make serve, is WSGI and keeps its connections).
os.environ.setdefault("DB_CONN_MAX_AGE", "0")

application = get_asgi_application()
prepare_process()
