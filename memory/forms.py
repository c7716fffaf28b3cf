"""The forms reviewers post: one decision, a bulk decision, a revoke or reopen."""

from __future__ import annotations

from typing import Any

from django import forms

REASON_MAX = 2000


class ReasonForm(forms.Form):
    """An optional free-text reason (revoke, reopen)."""

    reason = forms.CharField(required=False, max_length=REASON_MAX)


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
