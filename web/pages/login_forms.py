"""Sign-in forms with the login throttle (lens/serving/throttle.py), for both login pages: the
dashboard's ``/accounts/login/`` and the admin's ``/admin/login/``."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView

from lens.serving import throttle


class ThrottledLogin(AuthenticationForm):
    """Counts an attempt before checking its password (refusing a throttled username
    without checking it), keeps it counted when the password is wrong and clears the
    count on success."""

    def clean(self) -> dict[str, Any]:
        username = str(self.cleaned_data.get("username") or "")
        if not (username and self.cleaned_data.get("password")):
            # No password is checked (the missing field says why): nothing to count, and
            # nothing succeeded either, so the count stays as it is.
            return super().clean()
        try:
            attempt = throttle.reserve(username)
        except throttle.Throttled as exc:
            raise forms.ValidationError(
                throttle.refusal_message(exc.until), code="throttled"
            ) from None
        try:
            cleaned = super().clean()
        except forms.ValidationError:
            # Only a wrong username or password stays counted, not e.g. a non-staff user
            # at the admin's door with the right password.
            if self.user_cache is not None:
                throttle.release(attempt)
            raise
        throttle.record_success(username)
        return cleaned


class ThrottledAdminLogin(ThrottledLogin, AdminAuthenticationForm):
    """The admin's sign-in form (staff only), throttled the same way."""


login = LoginView.as_view(authentication_form=ThrottledLogin)
