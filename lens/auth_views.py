"""Sign-in forms with the login throttle (lens/throttle.py), for both login pages: the
dashboard's ``/accounts/login/`` and the admin's ``/admin/login/``."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView

from lens import throttle


class ThrottledLogin(AuthenticationForm):
    """Refuses a throttled username before checking its password; counts the failures
    and clears them on success."""

    def clean(self) -> dict[str, Any]:
        username = str(self.cleaned_data.get("username") or "")
        if username:
            until = throttle.refused_until(username)
            if until is not None:
                raise forms.ValidationError(throttle.refusal_message(until), code="throttled")
        try:
            cleaned = super().clean()
        except forms.ValidationError:
            # Only a wrong username or password counts, not e.g. a non-staff user at the
            # admin's door with the right password.
            if username and self.user_cache is None:
                throttle.record_failure(username)
            raise
        if username:
            throttle.record_success(username)
        return cleaned


class ThrottledAdminLogin(ThrottledLogin, AdminAuthenticationForm):
    """The admin's sign-in form (staff only), throttled the same way."""


login = LoginView.as_view(authentication_form=ThrottledLogin)
