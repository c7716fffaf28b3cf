"""WSGI entry point."""

from __future__ import annotations

import os

from django.core.wsgi import get_wsgi_application

from lens.serving.runtime import prepare_process
from lens.serving.telemetry import start_tracing

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lens.settings")

# Traces when the OTEL_* variables ask for them: before the handler loads its middleware.
start_tracing()
application = get_wsgi_application()
prepare_process()
