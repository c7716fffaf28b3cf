"""Admin text as typed: line breaks normalised to LF, and no trimming of prose.

A browser submits every textarea's line breaks as CR LF, so without this an agent saved
unchanged in the admin gained a CR per line (a 481-character manual became 485) and
every prompt built from it changed. The posted data is normalised once, before the page's
form and every inline formset read it, so no admin form or inline can miss it.
"""

from __future__ import annotations

from typing import Any, TypeVar

from django import forms
from django.contrib import admin
from django.db import models
from django.http import HttpRequest, HttpResponse, QueryDict

from lens.core.text import normalise_line_breaks

_M = TypeVar("_M", bound=models.Model)


def normalised(data: QueryDict) -> QueryDict:
    """A copy of posted ``data`` whose every value has its line breaks normalised."""
    copy = data.copy()
    for name, values in data.lists():
        copy.setlist(name, [normalise_line_breaks(value) for value in values])
    copy._mutable = False
    return copy


class AsTypedFields(admin.options.BaseModelAdmin[_M]):
    """Multi-line text fields keep their leading and trailing whitespace (Django's
    form fields strip it): a manual ending in a line break keeps it when saved."""

    def formfield_for_dbfield(
        self, db_field: models.Field[Any, Any], request: HttpRequest, **kwargs: Any
    ) -> forms.Field | None:
        field = super().formfield_for_dbfield(db_field, request, **kwargs)
        if isinstance(db_field, models.TextField) and isinstance(field, forms.CharField):
            field.strip = False
        return field


class LineBreaksAdmin(AsTypedFields[_M], admin.ModelAdmin[_M]):
    """A ModelAdmin whose add and change pages store text as typed (SPEC §9)."""

    def changeform_view(
        self,
        request: HttpRequest,
        object_id: str | None = None,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        if request.method == "POST":
            request.POST = normalised(request.POST)  # type: ignore[assignment]  # read-only copy
        return super().changeform_view(request, object_id, form_url, extra_context)
