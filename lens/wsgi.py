"""WSGI entry point."""

from __future__ import annotations

import gc
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lens.settings")
application = get_wsgi_application()
# Everything loaded so far lives as long as the process: move it out of the cyclic
# collector's sight, so collections during requests (the fold allocates thousands of
# small objects) do not rescan the whole framework each time.
gc.freeze()
