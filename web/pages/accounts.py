"""The account pages Django's auth offers, less the ones this deployment cannot honour.

Password reset works by mail: without a mail server configured (EMAIL_URL or
EMAIL_HOST, lens/settings.py) its pages would accept an address and send nothing, so
they do not exist. Log in, log out and password change always do.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import urls as auth_urls
from django.urls import URLPattern, URLResolver


def account_urlpatterns(*, email_configured: bool | None = None) -> list[URLPattern | URLResolver]:
    """Django's ``django.contrib.auth.urls``; without mail, no ``password_reset*`` route."""
    if email_configured is None:
        email_configured = settings.EMAIL_CONFIGURED
    return [
        pattern
        for pattern in auth_urls.urlpatterns
        if email_configured
        or not (
            isinstance(pattern, URLPattern) and (pattern.name or "").startswith("password_reset")
        )
    ]
