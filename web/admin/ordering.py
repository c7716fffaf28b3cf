"""Ordering inline rows in the admin: arrows instead of typed positions.

Every ordered inline row shows its position with a "Move up" and a "Move down" button.
Without JavaScript the buttons submit the form (saving it, like "Save and continue
editing") and the server swaps the row with its neighbour; with JavaScript
(``static/lens/admin.js``) they move the row on the page and renumber the positions.
Either way the positions saved are contiguous from 0, in the order the rows were put in,
as the API stores them.
"""

from __future__ import annotations

import math
import re
from typing import Any, TypeVar

from django import forms
from django.contrib import admin
from django.db import models
from django.forms.formsets import DELETION_FIELD_NAME
from django.forms.models import BaseInlineFormSet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.utils.html import format_html
from django.utils.safestring import SafeString

MOVE_FIELD = "_move"
# "<formset prefix>-<row index>:<up|down>", the value of a move button.
_MOVE_VALUE = re.compile(r"^(?P<prefix>[\w-]+)-(?P<index>\d+):(?P<direction>up|down)$")
_ROW_NAME = re.compile(r"-(\d+)-position$")

_M = TypeVar("_M", bound=models.Model)
_Row = TypeVar("_Row", bound=models.Model)
_Parent = TypeVar("_Parent", bound=models.Model)


def parse_move(value: str | None) -> tuple[str, int, int] | None:
    """(formset prefix, row index, -1 for up or +1 for down) of a move button's value."""
    match = _MOVE_VALUE.fullmatch(value or "")
    if match is None:
        return None
    step = -1 if match["direction"] == "up" else 1
    return match["prefix"], int(match["index"]), step


class PositionWidget(forms.NumberInput):
    """The position as a number (kept for pages without JavaScript) and two buttons."""

    def __init__(self, attrs: dict[str, Any] | None = None) -> None:
        super().__init__({"min": "0", "class": "lens-order-input", **(attrs or {})})

    def render(
        self, name: str, value: Any, attrs: dict[str, Any] | None = None, renderer: Any = None
    ) -> SafeString:
        number = super().render(name, value, attrs, renderer)
        row = name.removesuffix("-position")
        match = _ROW_NAME.search(name)
        which = f"row {int(match[1]) + 1}" if match else "this row"
        return format_html(
            '<span class="lens-order" data-order>{}'
            '<button type="submit" name="{}" value="{}:up" class="lens-move" '
            'data-move="up" aria-label="Move {} up" title="Move up">\u2191</button>'
            '<button type="submit" name="{}" value="{}:down" class="lens-move" '
            'data-move="down" aria-label="Move {} down" title="Move down">\u2193</button>'
            "</span>",
            number,
            MOVE_FIELD,
            row,
            which,
            MOVE_FIELD,
            row,
            which,
        )


class OrderedForm(forms.ModelForm[_M]):
    """A row with a ``position``: blank on a new row, which then goes last."""

    position = forms.IntegerField(
        label="Order", required=False, min_value=0, widget=PositionWidget()
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk is None:
            # Not the model's default 0, which would sort a new row first and make an
            # untouched blank row look edited.
            self.initial["position"] = None


class OrderedFormSet(BaseInlineFormSet[_Row, _Parent]):
    """Numbers the kept rows 0, 1, 2… by the positions submitted (ties and blanks keep
    the rows' order on the page), after applying a move button's swap."""

    def clean(self) -> None:
        super().clean()
        kept = [
            (index, form)
            for index, form in enumerate(self.forms)
            if getattr(form, "cleaned_data", None) is not None
            and (form.instance.pk is not None or form.has_changed())
            and not (self.can_delete and form.cleaned_data.get(DELETION_FIELD_NAME))
        ]

        def submitted(item: tuple[int, forms.ModelForm[_Row]]) -> tuple[float, int]:
            index, form = item
            position = form.cleaned_data.get("position")
            return (math.inf if position is None else position, index)

        ordered = [form for _index, form in sorted(kept, key=submitted)]
        move = parse_move(self.data.get(MOVE_FIELD) if self.is_bound else None)
        if move is not None and move[0] == self.prefix and move[1] < len(self.forms):
            moving = self.forms[move[1]]
            if moving in ordered:
                at = ordered.index(moving)
                to = at + move[2]
                if 0 <= to < len(ordered):
                    ordered[at], ordered[to] = ordered[to], ordered[at]
        for rank, form in enumerate(ordered):
            form.cleaned_data["position"] = rank
            # Every ordered model has a ``position`` field, but no common base declares it.
            row: Any = form.instance
            row.position = rank
            if rank != form.initial.get("position") and "position" not in form.changed_data:
                # An untouched row that moved must still be saved (and logged).
                form.changed_data.append("position")


class OrderedRowsAdmin(admin.ModelAdmin[_M]):
    """A ModelAdmin with ordered inlines: a move button saves and comes back. (The
    arrows' script and styles are on every admin page: ``templates/admin/base_site.html``.)"""

    # The first submit button of a form is the one Enter presses: the top "Save" row
    # keeps it from being a row's "Move up".
    save_on_top = True

    def changeform_view(
        self,
        request: HttpRequest,
        object_id: str | None = None,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        move = parse_move(request.POST.get(MOVE_FIELD)) if request.method == "POST" else None
        if move is not None:
            # A move saves like "Save and continue editing", whose redirect and message
            # the admin already has; the anchor brings the reader back to the rows.
            data = request.POST.copy()
            data["_continue"] = "1"
            request.POST = data  # type: ignore[assignment]  # a mutable copy, on purpose
        response = super().changeform_view(request, object_id, form_url, extra_context)
        if move is not None and isinstance(response, HttpResponseRedirect):
            response["Location"] = f"{response['Location']}#{move[0]}-group"
        return response
