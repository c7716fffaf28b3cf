"""Django settings for django-tasks under the task-engine benchmark
(``bench/task_engines.py``): django-tasks and its database backend alone, on the
database ``DATABASE_URL`` names, with the SQLite options the product runs with
(``lens/settings.py``: WAL, ``synchronous=FULL``, ``BEGIN IMMEDIATE``, a 20 s busy
timeout), so an enqueue costs here what it would cost beside a memory save.
"""

from __future__ import annotations

import os
from typing import Any

import dj_database_url

SECRET_KEY = "task-engine-benchmark-only"
DEBUG = False  # no query log; db_worker does not reload on code changes either
USE_TZ = True
TIME_ZONE = "UTC"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
INSTALLED_APPS = ["django_tasks", "django_tasks_db"]
TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}

_db: dict[str, Any] = dict(dj_database_url.parse(os.environ["DATABASE_URL"]))
# Connections persist, as in the product's server processes and a worker's loop.
_db["CONN_MAX_AGE"] = None
if _db["ENGINE"] == "django.db.backends.sqlite3":
    _db["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;",
    }
DATABASES = {"default": _db}
