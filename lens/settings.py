"""Settings for Composition Lens: one module, every knob from the environment."""

from __future__ import annotations

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from lens.envconf import env_bool, env_choice, env_int, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent

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
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "lens.middleware.ApiMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "lens.urls"
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
                "lens.context_processors.current_team",
            ],
        },
    }
]

_database_url = env_str("DATABASE_URL", f"sqlite:///{BASE_DIR / 'db.sqlite3'}")
try:
    _db = dj_database_url.parse(_database_url, conn_max_age=env_int("DB_CONN_MAX_AGE", 0))
except ValueError as exc:  # unknown scheme or a malformed URL
    raise ImproperlyConfigured(f"DATABASE_URL is not a valid database URL: {exc}") from exc
if _db["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets readers run beside a writer; IMMEDIATE takes the write lock at BEGIN
    # so concurrent writers queue on the busy timeout instead of failing mid-transaction.
    _db["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    # Tests use a real file too, so threads and live servers exercise WAL and the
    # busy timeout exactly as production does (an in-memory database cannot).
    # One file per test process, so concurrent test runs never share a database.
    _default_test_db = BASE_DIR / "var" / f"test-{os.getpid()}.sqlite3"
    _db["TEST"] = {"NAME": env_str("SQLITE_TEST_NAME", str(_default_test_db))}
elif _db["ENGINE"] != "django.db.backends.postgresql":
    raise ImproperlyConfigured("DATABASE_URL must point at SQLite or PostgreSQL")
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
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
# Serve straight from the finders when nobody ran collectstatic (development, tests).
WHITENOISE_USE_FINDERS = True

SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_SAMESITE = "Lax"
SESSION_COOKIE_SECURE = env_bool("SECURE_COOKIES", default=False)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE

# One MiB: the API refuses larger bodies with 413 (see lens.middleware).
API_MAX_BODY_BYTES = 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = API_MAX_BODY_BYTES

# Routing specs the deployment offers, by import path (memory.core.routing).
MEMORY_ROUTING_SPECS: list[str] = env_list(
    "MEMORY_ROUTING_SPECS", ["memory.core.presets.USER_BACKGROUND", "memory.core.presets.PROJECT"]
)
# Code points of memory-derived Background lines, prefix and newline included.
MEMORY_OVERLAY_BUDGET_CHARS = env_int("MEMORY_OVERLAY_BUDGET_CHARS", 3000, minimum=0)
MEMORY_RECALL_BUDGET_CHARS = env_int("MEMORY_RECALL_BUDGET_CHARS", 4000, minimum=0)

LOG_LEVEL = env_choice("LOG_LEVEL", "WARNING", ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"))
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
}
