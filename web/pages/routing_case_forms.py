"""The "Add as a routing case" form (a memory's page): the memory's fields prefilled,
the section it landed in (changeable, or declined) and a name, validated exactly as the
API validates a case."""

from __future__ import annotations

from typing import Any

from django import forms
from pydantic import ValidationError

from lens.core.errors import pydantic_problems
from lens.models import Agent
from memory.core.records import CONTENT_MAX, LABEL_MAX
from memory.core.routing_eval import NAME_MAX, CaseInput
from memory.models import MemoryRecord
from memory.routing_cases import declared

DECLINED = "declined"


class RoutingCaseForm(forms.Form):
    """A memory as a routing case: its fields prefilled, the section it landed in
    changeable (or declined), and a name."""

    team = forms.CharField(widget=forms.HiddenInput)
    name = forms.CharField(max_length=NAME_MAX, strip=False)
    expect = forms.ChoiceField(label="Expected section")
    kind = forms.CharField(max_length=32)
    content = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}), max_length=CONTENT_MAX)
    label = forms.CharField(max_length=LABEL_MAX, required=False, strip=False)
    tags = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 2}), required=False, help_text="One tag a line."
    )

    def __init__(self, *args: Any, sections: dict[str, str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choices = [
            (section_id, f"{title} ({section_id})") for section_id, title in sections.items()
        ]
        expect = self.fields["expect"]
        assert isinstance(expect, forms.ChoiceField)
        expect.choices = [
            *choices,
            (DECLINED, "Declined: the spec should decline it"),
        ]

    def case_input(self) -> CaseInput | None:
        """The case, validated as the API validates one; problems become form errors."""
        data = self.cleaned_data
        raw = {
            "name": data["name"],
            "kind": data["kind"],
            "content": data["content"].replace("\r\n", "\n"),
            "tags": [tag for tag in data["tags"].replace("\r\n", "\n").split("\n") if tag],
            "label": data["label"] or None,
            "expect": {"section": None if data["expect"] == DECLINED else data["expect"]},
        }
        try:
            return CaseInput.model_validate(raw)
        except ValidationError as exc:
            for loc, message in pydantic_problems(exc.errors()):
                field = loc.split(".")[0]
                self.add_error(field if field in self.fields else None, message)
            return None


def case_form_for(record: MemoryRecord, agent: Agent, promotion: Any) -> RoutingCaseForm:
    """The form a memory's page shows, prefilled from the memory."""
    sections = {section.id: section.title for section in declared(agent).sections}
    landed = getattr(promotion, "section", None)
    title = record.label or " ".join(record.content.split())
    name = f"{record.kind}: {title}"
    return RoutingCaseForm(
        sections=sections,
        initial={
            "team": agent.team.slug,
            "name": name if len(name) <= NAME_MAX else name[: NAME_MAX - 1] + "…",
            "expect": landed if landed in sections else DECLINED,
            "kind": record.kind,
            "content": record.content,
            "label": record.label or "",
            "tags": "\n".join(record.tags or []),
        },
    )
