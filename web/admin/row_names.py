"""Names for the controls of tabular inline rows.

A tabular inline shows a field's label once, as its column's header, and no ``<label>``
by each row's control, so a screen reader would hear "edit text" row after row. Every
visible control of a row is named "<column>, row <n>" instead (``aria-label``). The blank
row the admin's script copies for "Add another" is a "new row"; ``static/lens/admin.js``
numbers the rows again when one is added, removed or moved.
"""

from __future__ import annotations

from typing import Any, TypeVar

from django import forms
from django.contrib import admin
from django.contrib.admin.widgets import RelatedFieldWidgetWrapper
from django.db import models
from django.forms.models import BaseInlineFormSet
from django.http import HttpRequest

# The parts of a split date and time field, in the order its boxes show.
_SPLIT_PARTS = ("date", "time")

_Row = TypeVar("_Row", bound=models.Model)
_Parent = TypeVar("_Parent", bound=models.Model)


def row_name(column: str, index: int | None) -> str:
    """``"Title, row 3"`` for the row at ``index`` (from 0), ``"Title, new row"`` for the
    blank row new rows are copied from."""
    return f"{column}, new row" if index is None else f"{column}, row {index + 1}"


def name_row_controls(form: forms.BaseForm, index: int | None) -> None:
    """Gives every visible control of ``form`` its column and row as its name."""
    for field in form.fields.values():
        widget = field.widget
        while isinstance(widget, RelatedFieldWidgetWrapper):
            # The wrapper's attrs are those of the widget it was copied from, not of the
            # one it renders.
            widget = widget.widget
        if widget.is_hidden:
            continue
        column = str(field.label or "")
        if isinstance(widget, forms.MultiWidget):
            # Each box of a split field says which part it holds; a name on the whole
            # widget would override theirs.
            split = isinstance(widget, forms.SplitDateTimeWidget)
            for number, part in enumerate(widget.widgets):
                which = _SPLIT_PARTS[number] if split else f"part {number + 1}"
                part.attrs["aria-label"] = row_name(f"{column} ({which})", index)
        else:
            widget.attrs["aria-label"] = row_name(column, index)


class NamedRowsFormSet(BaseInlineFormSet[_Row, _Parent]):
    """An inline formset whose rows' controls are named by column and row."""

    def add_fields(self, form: forms.ModelForm[_Row], index: int | None) -> None:
        # After the formset's own fields (Delete, the parent's key) are added.
        super().add_fields(form, index)
        name_row_controls(form, index)


class NamedRowsInline(admin.TabularInline[_Row, _Parent]):
    """A tabular inline whose formset, whatever class it is, names its rows' controls."""

    def get_formset(self, request: HttpRequest, obj: Any = None, **kwargs: Any) -> Any:
        formset = super().get_formset(request, obj, **kwargs)
        if issubclass(formset, NamedRowsFormSet):
            return formset
        return type(formset.__name__, (NamedRowsFormSet, formset), {})
