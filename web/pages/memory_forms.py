"""The forms people post: a reviewer's decision, bulk decision, undo, revoke, reopen,
validity window or erasure, and the lens's "Try a memory"."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django import forms
from django.utils.dateparse import parse_datetime
from pydantic import ValidationError

from lens.core.errors import pydantic_problems
from memory.core.records import MemoryInput, parse_valid_until
from memory.erasure import REASON_MAX as ERASE_REASON_MAX
from memory.erasure import reason_problem

REASON_MAX = 2000


class ReasonForm(forms.Form):
    """An optional free-text reason (revoke, reopen)."""

    reason = forms.CharField(required=False, max_length=REASON_MAX)


class ValidityForm(forms.Form):
    """A reviewer's new ``valid_until`` for a memory (SPEC §19.2): a date and time (a
    browser's ``datetime-local`` has no zone: read as UTC), or ``clear`` to remove it."""

    valid_until = forms.CharField(required=False, max_length=64, strip=True)
    clear = forms.CharField(required=False, max_length=8)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if cleaned.get("clear"):
            cleaned["moment"] = None
            return cleaned
        text = cleaned.get("valid_until") or ""
        if not text:
            raise forms.ValidationError("Choose a date and time, or Clear to remove the window.")
        try:
            cleaned["moment"] = parse_valid_until(text)
        except ValueError:
            raise forms.ValidationError(
                f"{text[:64]!r} is no date and time: use the form 2030-01-31T12:00 (UTC)."
            ) from None
        return cleaned


class DecisionForm(ReasonForm):
    decision = forms.ChoiceField(
        choices=[("approve", "Approve"), ("reject", "Reject")],
        error_messages={
            "required": "decision must be approve or reject",
            "invalid_choice": "decision must be approve or reject",
        },
    )

    @property
    def approve(self) -> bool:
        return bool(self.cleaned_data["decision"] == "approve")

    @property
    def note(self) -> str:
        """The reason, which only a rejection keeps."""
        return "" if self.approve else str(self.cleaned_data["reason"])

    def first_error(self) -> str:
        return next(str(error) for errors in self.errors.values() for error in errors)


class RecordIdsField(forms.Field):
    """The ids of the checked rows (``<input name="selected">``, repeated)."""

    widget = forms.MultipleHiddenInput

    def to_python(self, value: Any) -> list[str]:
        return [item for item in value or [] if isinstance(item, str)]


class BulkDecisionForm(DecisionForm):
    selected = RecordIdsField(error_messages={"required": "Select at least one memory first."})

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["decision"].error_messages.update(
            required="Choose Approve selected or Reject selected.",
            invalid_choice="Choose Approve selected or Reject selected.",
        )


class UndoForm(forms.Form):
    """Which decision the Undo button takes back: its outcome and its moment."""

    decided = forms.ChoiceField(choices=[("approved", "approved"), ("rejected", "rejected")])
    at = forms.CharField(required=False, max_length=64)

    def clean_at(self) -> datetime | None:
        text = self.cleaned_data["at"]
        if not text:
            return None
        moment = parse_datetime(text)
        if moment is None or moment.tzinfo is None:
            raise forms.ValidationError("at must be an ISO 8601 moment with its offset")
        return moment


class UndoManyForm(UndoForm):
    """Which bulk decision the Undo button takes back: its rows, outcome and moment."""

    ids = forms.CharField(max_length=20_000)

    def clean_at(self) -> datetime:
        moment = super().clean_at()
        if moment is None:
            raise forms.ValidationError("at is required to undo a bulk decision")
        return moment

    def clean_ids(self) -> list[str]:
        return [i for i in self.cleaned_data["ids"].split(",") if i]


class ConfirmForm(ReasonForm):
    """A revoke is done only from its confirmation page, which posts ``confirm``."""

    confirm = forms.BooleanField(required=False)


class TryMemoryForm(forms.Form):
    """The lens's "Try a memory": a save's body, previewed (nothing is saved).

    ``team`` is the team the form was rendered for: a preview asked from a page of
    another team (an old tab after switching) is refused, not run against this one.
    """

    # strip=False: the preview must see the body exactly as a save would receive it
    # (a label ending in a tab is refused; trailing spaces count against the budget).
    team = forms.CharField(widget=forms.HiddenInput)
    kind = forms.CharField(max_length=64, initial="profile", strip=False)
    label = forms.CharField(required=False, max_length=200, strip=False)
    content = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}), max_length=40_000, strip=False
    )
    supersedes = forms.CharField(required=False, max_length=64, strip=False)

    def memory_input(self) -> MemoryInput | None:
        """The body a save would take, or None with the problems added as form errors."""
        data = self.cleaned_data
        try:
            return MemoryInput.model_validate(
                {
                    "kind": data["kind"],
                    "content": data["content"],
                    "label": data["label"] or None,
                    "supersedes": data["supersedes"] or None,
                }
            )
        except ValidationError as exc:
            for loc, message in pydantic_problems(exc.errors()):
                field = loc.split(".")[0]
                self.add_error(field if field in self.fields else None, message)
            return None


class EraseForm(forms.Form):
    """Erasing a memory (SPEC §15): a reason, and the memory's id typed again, so an
    erasure is never one stray click, nor done from a page about another memory."""

    # Bounded here and by the operation (``memory.erasure.reason_problem``), which says why.
    reason = forms.CharField(max_length=ERASE_REASON_MAX, strip=True)
    confirm = forms.CharField(max_length=64, strip=True, required=False)

    def __init__(self, *args: Any, record_id: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.record_id = record_id
        self.fields["reason"].error_messages.update(
            required="A reason is required: say why the memory is erased (a request, a ticket).",
            max_length=f"The reason is at most {ERASE_REASON_MAX} characters.",
        )

    def clean_reason(self) -> str:
        reason = str(self.cleaned_data["reason"])
        if (problem := reason_problem(reason)) is not None:
            raise forms.ValidationError(problem)
        return reason

    def clean_confirm(self) -> str:
        typed = str(self.cleaned_data.get("confirm") or "")
        if typed != self.record_id:
            raise forms.ValidationError(
                f"Type the memory's id, {self.record_id}, to confirm: "
                + ("nothing was typed." if not typed else "what was typed is not its id.")
                + " Nothing was erased."
            )
        return typed
