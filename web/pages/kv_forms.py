"""The key/value page's forms: write a new version, delete a key."""

from __future__ import annotations

from typing import Any

from django import forms


class WriteForm(forms.Form):
    payload = forms.CharField(required=False, strip=False)
    # The version the text was based on: the write is a compare-and-swap against it.
    if_version = forms.IntegerField(required=False, min_value=0, max_value=2**31 - 1)

    def clean_payload(self) -> str:
        # Browsers submit textareas with CRLF line endings; the store keeps what was typed.
        return str(self.cleaned_data["payload"]).replace("\r\n", "\n")


class DeleteForm(forms.Form):
    confirm = forms.CharField(required=False, strip=False)

    def __init__(self, key: str, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.key = key

    def clean_confirm(self) -> str:
        if self.cleaned_data["confirm"] != self.key:
            raise forms.ValidationError("Type the key's name to confirm deleting it.")
        return self.key
