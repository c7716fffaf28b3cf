"""Settings for Composition Lens: one module, every knob from the environment."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import dj_database_url
import django_stubs_ext
from django.core.exceptions import ImproperlyConfigured

from lens.envconf import (
    env_bool,
    env_choice,
    env_context_windows,
    env_int,
    env_list,
    env_str,
    https_origins,
    smtp_settings,
)

BASE_DIR = Path(__file__).resolve().parent.parent

# Django's admin, form and formset classes take their model as a type parameter
# (``admin.ModelAdmin[Agent]``) for mypy; this lets them be subscripted at run time too.
django_stubs_ext.monkeypatch()

DEBUG = env_bool("DEBUG", default=False)

_secret = env_str("SECRET_KEY")
if _secret is None:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY is required when DEBUG is off")
    # Only ever used on a developer's machine: DEBUG must be on to reach this.
    _secret = "dev-only-insecure-secret-key-do-not-deploy"
SECRET_KEY = _secret

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"] if DEBUG else [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django_htmx",
    "template_partials",
    "ninja",  # serves the API docs (Swagger UI) from its own static files, not a CDN
    "lens",
    "memory",
    "kvstore",
    # The webhook sender's task engine: django-tasks with its database backend, whose
    # tasks wait in the app's own database (no extra service; SKIP LOCKED on PostgreSQL).
    "django_tasks",
    "django_tasks_db",
    "webhooks",
    "web",  # every page, API router, admin class, MCP tool and command
    "demo",  # the demo's data and seed_demo, beside the product
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "lens.serving.middleware.SecurityHeadersMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "lens.serving.middleware.ApiMiddleware",
    "lens.serving.compression.ApiCompressionMiddleware",  # large API JSON answers, gzipped
    # Before the session is read: a cookie is one of the inputs it checks.
    "lens.serving.middleware.InputGuardMiddleware",
    # API requests leave the chain here for their view; what follows serves pages.
    "lens.serving.middleware.ApiBypassMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "lens.serving.middleware.ActingPersonMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # A page's PermissionDenied as the 403 page, logged in one line (no traceback).
    "lens.serving.middleware.RefusalMiddleware",
]

ROOT_URLCONF = "web.urls"
WSGI_APPLICATION = "lens.wsgi.application"
ASGI_APPLICATION = "lens.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "web.pages.team_context.current_team",
            ],
        },
    }
]

_database_url = env_str("DATABASE_URL", f"sqlite:///{BASE_DIR / 'db.sqlite3'}")
try:
    _db = dj_database_url.parse(_database_url, conn_health_checks=True)
except ValueError as exc:  # unknown scheme or a malformed URL
    raise ImproperlyConfigured(f"DATABASE_URL is not a valid database URL: {exc}") from exc
# The pool is PostgreSQL's; on SQLite DB_POOL is ignored and connections persist.
_pooled = _db["ENGINE"] == "django.db.backends.postgresql" and env_bool("DB_POOL", default=False)
# Connections persist between requests (one per server thread): opening one costs more
# than most requests (a WAL database's first read on a new connection alone is ~0.35 ms,
# and closing the last connection checkpoints and deletes the WAL). Each request checks
# that a reused connection still answers before using it (CONN_HEALTH_CHECKS), so a
# restarted database costs one failed check, never a failed request. The PostgreSQL pool
# (DB_POOL=1) keeps connections itself and needs CONN_MAX_AGE=0.
# Only where threads live long: the development server (`manage.py runserver`) answers
# each client connection on a thread of its own, so a persistent connection there lives
# as long as the client's kept-alive socket and PostgreSQL runs out of connections
# (300 requests: "too many clients already"). Django's documentation warns of the same.
_RUNSERVER = sys.argv[1:2] == ["runserver"]
_db["CONN_MAX_AGE"] = env_int("DB_CONN_MAX_AGE", 0 if _pooled or _RUNSERVER else 600, minimum=0)
if _db["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets readers run beside a writer; IMMEDIATE takes the write lock at BEGIN
    # so concurrent writers queue on the busy timeout instead of failing mid-transaction.
    # synchronous=FULL: a write is acknowledged only once it is on disk (fsync at each
    # commit), as PostgreSQL and etcd do; NORMAL may lose the last commits on power loss.
    # secure_delete=ON: content SQLite frees (an updated row's old cell, a page that
    # leaves the tree) is overwritten with zeros, so an erased memory's words do not
    # linger in free space of the file (SPEC §15; memory/erasure.py).
    _synchronous = env_choice("SQLITE_SYNCHRONOUS", "FULL", ("FULL", "NORMAL"))
    _db["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
        "init_command": (
            f"PRAGMA journal_mode=WAL; PRAGMA synchronous={_synchronous}; PRAGMA secure_delete=ON;"
        ),
    }
    # Tests use a real file too, so threads and live servers exercise WAL and the
    # busy timeout exactly as production does (an in-memory database cannot).
    # One file per test process, so concurrent test runs never share a database.
    _default_test_db = BASE_DIR / "var" / f"test-{os.getpid()}.sqlite3"
    _db["TEST"] = {"NAME": env_str("SQLITE_TEST_NAME", str(_default_test_db))}
elif _db["ENGINE"] != "django.db.backends.postgresql":
    raise ImproperlyConfigured("DATABASE_URL must point at SQLite or PostgreSQL")
else:
    # One test database per test process here too (Django's default name is the same
    # for every run, so two runs at once would drop each other's).
    _db["TEST"] = {"NAME": f"test_{_db['NAME']}_{os.getpid()}"}
    # Behind a pooler in transaction mode (PgBouncer), a server-side cursor declared
    # outside a transaction (``.iterator()``: the key history page, verify_audit, doctor)
    # is fetched later on whichever server connection the pooler hands out, where it does
    # not exist ("portal … does not exist"). DB_SERVER_SIDE_CURSORS=0 reads those rows in
    # one piece instead (docs/scaling.md).
    _db["DISABLE_SERVER_SIDE_CURSORS"] = not env_bool("DB_SERVER_SIDE_CURSORS", default=True)
    # Server-side prepared statements: psycopg prepares a statement on a connection after
    # it has run this many times, and from then on PostgreSQL skips parsing and planning
    # it (a key/value read's two statements took 260-420 µs unprepared, 65 µs prepared,
    # on loopback). Pooled connections keep theirs: the pool hands the same connection
    # objects out again. Django turns them off by default for PgBouncer's transaction
    # mode before 1.21, where a statement prepared on one server connection is unknown on
    # the next: DB_PREPARE_THRESHOLD=off there.
    _prepare = env_str("DB_PREPARE_THRESHOLD", "5").strip().lower()
    if _prepare not in ("off", ""):
        try:
            _prepare_threshold = int(_prepare)
        except ValueError:
            _prepare_threshold = -1
        if _prepare_threshold < 0:
            raise ImproperlyConfigured("DB_PREPARE_THRESHOLD must be a whole number ≥ 0 or off")
        _db["OPTIONS"] = {**_db.get("OPTIONS", {}), "prepare_threshold": _prepare_threshold}
if _db["ENGINE"] == "django.db.backends.postgresql" and _pooled:
    # Django's psycopg 3 pool: each server process keeps warm connections instead of
    # opening one per request. A pooled connection goes back to the pool after each
    # request, so persistent connections (CONN_MAX_AGE) make no sense beside it.
    if _db["CONN_MAX_AGE"] != 0:
        raise ImproperlyConfigured("DB_POOL=1 needs DB_CONN_MAX_AGE=0 (the pool keeps them)")
    _db["OPTIONS"] = {
        **_db.get("OPTIONS", {}),
        "pool": {
            "min_size": env_int("DB_POOL_MIN_SIZE", 2, minimum=0),
            # One connection per server thread (SERVER_THREADS, lens/serving/server.py) is enough.
            "max_size": env_int("DB_POOL_MAX_SIZE", 4, minimum=1),
            # Seconds a request waits for a free connection before failing.
            "timeout": env_int("DB_POOL_TIMEOUT", 10, minimum=1),
        },
    }
DATABASES = {"default": _db}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(BASE_DIR / "staticfiles")))
STATICFILES_DIRS = [BASE_DIR / "static"]
# In production (DEBUG off) collectstatic writes hashed, pre-compressed copies and a
# manifest; WhiteNoise serves them with a year-long immutable Cache-Control. Development
# and the test suite serve straight from the finders, where no manifest exists.
_TESTING = "pytest" in sys.modules
_COLLECTED = not DEBUG and not _TESTING
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if _COLLECTED
        else "whitenoise.storage.CompressedStaticFilesStorage"
    },
}
WHITENOISE_USE_FINDERS = not _COLLECTED

SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_SAMESITE = "Lax"

# HTTPS=1: the deployment sits behind a TLS-terminating proxy that sets
# X-Forwarded-Proto (and passes the Host header through).
HTTPS = env_bool("HTTPS", default=False)
SESSION_COOKIE_SECURE = env_bool("SECURE_COOKIES", default=HTTPS)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
if HTTPS:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = True
    # Load balancers probe health over plain HTTP, straight to the server.
    SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
    SECURE_HSTS_SECONDS = 31536000
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
# POSTs whose Origin is not the request's own host need their origin listed here
# (a proxy that rewrites Host, a non-default port). Behind HTTPS it defaults to
# https:// for every allowed host.
CSRF_TRUSTED_ORIGINS = env_list(
    "CSRF_TRUSTED_ORIGINS", https_origins(ALLOWED_HOSTS) if HTTPS else []
)

# Mail (password reset needs it): EMAIL_URL (smtp://, smtp+tls://, smtps://) or
# EMAIL_HOST and friends. Without either, no password-reset pages exist (web/urls.py).
_smtp = smtp_settings(env_str("EMAIL_URL"))
EMAIL_CONFIGURED = _smtp is not None or env_str("EMAIL_HOST") is not None
if _smtp is not None:
    EMAIL_HOST = _smtp.host
    EMAIL_PORT = _smtp.port
    EMAIL_HOST_USER = _smtp.user
    EMAIL_HOST_PASSWORD = _smtp.password
    EMAIL_USE_TLS = _smtp.use_tls
    EMAIL_USE_SSL = _smtp.use_ssl
else:
    EMAIL_HOST = env_str("EMAIL_HOST", "localhost")
    EMAIL_PORT = env_int("EMAIL_PORT", 25, minimum=1)
    EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", "")
    EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD", "")
    EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", default=False)
    EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL", default=False)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "webmaster@localhost")

# One MiB: the API refuses larger bodies with 413 (see lens.serving.middleware).
API_MAX_BODY_BYTES = 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = API_MAX_BODY_BYTES

# The WSGI application the production server puts in front of Django (lens/serving/served.py):
# the key/value store's own route, answering GET and PUT /api/kv/{key} as the API does at
# a fraction of the cost. API_FRONT=0 serves every request through Django alone.
API_FRONT = "web.api.kv_front.KvFront" if env_bool("API_FRONT", default=True) else ""

# Routing specs the deployment offers, by import path (memory.core.routing).
MEMORY_ROUTING_SPECS: list[str] = env_list(
    "MEMORY_ROUTING_SPECS", ["memory.core.presets.USER_BACKGROUND", "memory.core.presets.PROJECT"]
)
# Code points of memory-derived Background lines, prefix and newline included.
MEMORY_OVERLAY_BUDGET_CHARS = env_int("MEMORY_OVERLAY_BUDGET_CHARS", 3000, minimum=0)
# Distinct sessions that must save one memory before an earned section takes it (SPEC
# §19.1), the memory itself included.
EARNED_SIGHTINGS = env_int("EARNED_SIGHTINGS", 3, minimum=1)
MEMORY_RECALL_BUDGET_CHARS = env_int("MEMORY_RECALL_BUDGET_CHARS", 4000, minimum=0)
# Of the recall block, what memories the overlay budget left out may take (SPEC §19.3):
# below the whole, so spill never starves what the message's words find.
MEMORY_RECALL_SPILL_CHARS = env_int("MEMORY_RECALL_SPILL_CHARS", 1000, minimum=0)
# Compose each agent once per change (memory.composed): a per-process cache judged by the
# composition stamp in the database; at most this many agents' compositions are kept.
COMPOSITION_CACHE = env_bool("COMPOSITION_CACHE", default=True)
COMPOSITION_CACHE_AGENTS = env_int("COMPOSITION_CACHE_AGENTS", 512, minimum=1)
# Model name (case-folded) -> context window in tokens: lens.core.context_windows's
# table, extended or overridden by "name=tokens,…" items.
MODEL_CONTEXT_WINDOWS: dict[str, int] = env_context_windows("MODEL_CONTEXT_WINDOWS")

LOG_LEVEL = env_choice("LOG_LEVEL", "WARNING", ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"))
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
}

# Costly calls (stability, diffs, export, search): how many of one team's a server process
# runs at once (0: half its request threads, rounded up) and how long, in milliseconds,
# one past that share may wait for a turn before it is refused (web/costly.py).
TEAM_COSTLY_SHARE = env_int("TEAM_COSTLY_SHARE", 0, minimum=1)
TEAM_COSTLY_WAIT_MS = env_int("TEAM_COSTLY_WAIT_MS", 1000, minimum=0)
# Under make serve such a call waits on the event loop, holding no request thread
# (lens/serving/buffered.py): the web layer's turns, named here as API_FRONT is.
REQUEST_TURNS = "web.costly.loop_turn"

# Webhooks (SPEC §16, docs/webhooks.md). Their tasks run on `python manage.py worker`.
TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
# http:// URLs, and hosts on loopback, private, link-local or reserved addresses, are
# refused unless these are set: for development and tests, never in production.
WEBHOOKS_ALLOW_HTTP = env_bool("WEBHOOKS_ALLOW_HTTP", default=False)
WEBHOOKS_ALLOW_PRIVATE = env_bool("WEBHOOKS_ALLOW_PRIVATE", default=False)
# Seconds a receiver has to answer (SPEC §16: a 2xx within 10 s is success).
WEBHOOKS_TIMEOUT = env_int("WEBHOOKS_TIMEOUT", 10, minimum=1)
# The circuit breaker (webhooks/core/breaker.py): after this many failed tries in a row
# an endpoint is skipped for a pause of this many seconds (doubling after each failed
# probe, up to an hour), so a receiver that hangs does not hold a worker thread per try.
WEBHOOKS_BREAKER_FAILURES = env_int("WEBHOOKS_BREAKER_FAILURES", 5, minimum=1)
WEBHOOKS_BREAKER_PAUSE = env_int("WEBHOOKS_BREAKER_PAUSE", 30, minimum=1)
# Tasks a `manage.py worker` process runs at once, each on a thread with its own database
# connection (so a worker holds this many connections, and one more for its start): a
# receiver that hangs holds one thread, never the others' messages.
WORKER_THREADS = env_int("WORKER_THREADS", 4, minimum=1)
