"""ASGI entry point."""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

from lens.runtime import prepare_process

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lens.settings")

application = get_asgi_application()
prepare_process()
