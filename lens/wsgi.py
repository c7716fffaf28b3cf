"""WSGI entry point."""

from __future__ import annotations

import os

from django.core.wsgi import get_wsgi_application

from lens.serving.runtime import prepare_process

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lens.settings")

application = get_wsgi_application()
prepare_process()
