"""The admin's forms and formsets: each checks what the API checks, with the API's words.

Every form validates through the same pure schema the API uses (``lens.core``) or the
same registry (``memory.registry``), so the admin can never store what the API would
refuse, and a refusal names the value at fault on the row that holds it.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, TypeVar

from django import forms
from django.contrib.admin.widgets import AdminTextareaWidget
from django.core.validators import MaxLengthValidator
from django.db import models
from pydantic import ValidationError as PydanticValidationError

from lens.core.background import BackgroundEntry, duplicates
from lens.core.config import PROSE_MAX, name_problem, prose_problem
from lens.core.context_windows import model_problem
from lens.core.identity import key_skeleton
from lens.models import Agent, AuthoredEntry, AwarenessSource, Capability, SectionDeclaration
from memory.registry import UnknownRoutingSpec, check_spec_key, specs
from web.admin.ordering import OrderedForm, OrderedFormSet

_Row = TypeVar("_Row", bound=models.Model)
_Parent = TypeVar("_Parent", bound=models.Model)


def _first_message(error: PydanticValidationError) -> str:
    return str(error.errors()[0]["msg"]).removeprefix("Value error, ")


def _refuse_heading(text: str) -> None:
    if problem := prose_problem(text):
        raise forms.ValidationError(problem)


def _limit_prose(form: forms.BaseForm, *names: str) -> None:
    """The API's rules for authored prose (the models' text fields have none): its
    length bound, and no line that reads as a `#` or `##` heading."""
    for name in names:
        field = form.fields.get(name)
        if isinstance(field, forms.CharField):
            field.max_length = PROSE_MAX
            field.validators += [MaxLengthValidator(PROSE_MAX), _refuse_heading]


def _check_name(form: forms.BaseForm, what: str) -> None:
    """The API's rule for a capability's or source's name: no bidi controls."""

    def check(name: str) -> None:
        if problem := name_problem(name, what):
            raise forms.ValidationError(problem)

    form.fields["name"].validators.append(check)


# --- rows with a unique name -------------------------------------------------------------


class UniqueNamesFormSet(OrderedFormSet[_Row, _Parent]):
    """Refuses duplicates of ``unique_field`` among the rows being kept: the row at fault
    carries the error on its field, and the summary above the rows names the value."""

    unique_field = "name"
    label = "name"
    # What makes two values one name: the API compares names and entry keys by their
    # confusable skeleton ("name" and Cyrillic "nаme" are one); section ids are ASCII
    # by pattern and compare exactly.
    same = staticmethod(key_skeleton)

    def clean(self) -> None:
        # Before the model formset's own unique check, whose message ("Please correct
        # the duplicate data for ...") does not name the duplicate.
        rows: dict[str, list[tuple[str, forms.ModelForm[_Row]]]] = defaultdict(list)
        for form in self.forms:
            data = getattr(form, "cleaned_data", None)
            if data and not data.get("DELETE") and self.unique_field in data:
                value = data[self.unique_field]
                rows[self.same(value)].append((value, form))
        dupes = duplicates(value for value, forms_ in rows.items() for _ in forms_)
        for value in dupes:
            group = rows[value]
            # The rows that took the value now (new, or renamed in this save) are at
            # fault; when every one of them did, the first keeps it.
            taking = [
                (name, form)
                for name, form in group
                if form.instance.pk is None or self.unique_field in form.changed_data
            ]
            at_fault = taking if 0 < len(taking) < len(group) else group[1:]
            for name, form in at_fault:
                form.add_error(self.unique_field, self._duplicate(name, group[0][0]))
        super().clean()
        if dupes:
            group = rows[dupes[0]]
            raise forms.ValidationError(self._duplicate(group[-1][0], group[0][0]))

    def _duplicate(self, name: str, first: str) -> str:
        same = "" if name == first else f" (the same name as {first!r})"
        return f"duplicate {self.label} {name!r}{same}"


class UniqueInDatabaseFormSet(UniqueNamesFormSet[_Row, _Parent]):
    """For fields with a database unique constraint: lets rows swap or reuse values.

    Django saves inline rows one at a time, so swapping two ids (or renaming a row to
    the id of a row deleted in the same save) would trip the constraint halfway. The
    rows that change or go are first moved to placeholders no valid value can equal
    (the admin's save is one transaction, so nobody sees them).
    """

    def save_existing_objects(self, commit: bool = True) -> list[_Row]:
        if commit:
            deleted = self.deleted_forms
            moving = [
                form.instance.pk
                for form in self.initial_forms
                if form.instance.pk is not None
                and (form in deleted or self.unique_field in form.changed_data)
            ]
            model = self.model
            assert model is not None  # inlineformset_factory always sets it
            for pk in moving:
                model._default_manager.filter(pk=pk).update(**{self.unique_field: f"~{pk}"})
        return super().save_existing_objects(commit)


class SectionFormSet(UniqueInDatabaseFormSet[SectionDeclaration, Agent]):
    unique_field = "section_id"
    label = "section id"
    same = staticmethod(lambda text: text)


class EntryFormSet(UniqueInDatabaseFormSet[AuthoredEntry, SectionDeclaration]):
    unique_field = "key"
    label = "entry key"


class CapabilityFormSet(UniqueNamesFormSet[Capability, Agent]):
    label = "capability name"


class AwarenessFormSet(UniqueNamesFormSet[AwarenessSource, Agent]):
    label = "awareness source name"


# --- rows ------------------------------------------------------------------------------


class SectionRowForm(OrderedForm[SectionDeclaration]):
    class Meta:
        model = SectionDeclaration
        fields = ["section_id", "title", "promotion", "position"]


class CapabilityForm(OrderedForm[Capability]):
    class Meta:
        model = Capability
        fields = ["name", "description", "position"]
        widgets = {"description": AdminTextareaWidget(attrs={"rows": 3})}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _limit_prose(self, "description")
        _check_name(self, "capability name")


class AwarenessForm(OrderedForm[AwarenessSource]):
    class Meta:
        model = AwarenessSource
        fields = ["name", "description", "access_method", "position"]
        # A short box that grows with the column, not the admin's 48em text area.
        widgets = {"description": forms.Textarea(attrs={"rows": 2, "cols": 30})}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Awareness descriptions render collapsed onto one line: only the length bound.
        field = self.fields["description"]
        assert isinstance(field, forms.CharField)
        field.max_length = PROSE_MAX
        field.validators.append(MaxLengthValidator(PROSE_MAX))
        _check_name(self, "awareness source name")


VALUE_TYPES = [
    ("text", "text"),
    ("integer", "integer"),
    ("number", "number"),
    ("boolean", "boolean"),
]


def _value_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return "text"


def _parse_value(kind: str, text: str) -> str | int | float | bool:
    if kind == "integer":
        try:
            return int(text.strip())
        except ValueError:
            raise ValueError(f"{text!r} is not an integer") from None
    if kind == "number":
        try:
            number = float(text.strip())
        except ValueError:
            raise ValueError(f"{text!r} is not a number") from None
        if number != number or number in (float("inf"), float("-inf")):
            raise ValueError("numbers must be finite")
        return number
    if kind == "boolean":
        lowered = text.strip().lower()
        if lowered not in ("true", "false"):
            raise ValueError("a boolean is 'true' or 'false'")
        return lowered == "true"
    return text


class AuthoredEntryForm(OrderedForm[AuthoredEntry]):
    """Edits a scalar value as text plus a type, instead of raw JSON."""

    value_type = forms.ChoiceField(label="Type", choices=VALUE_TYPES, initial="text")
    # Not trimmed: a text value is stored as typed (numbers and booleans are parsed).
    value_text = forms.CharField(
        label="Value",
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 2, "cols": 40}),
    )

    class Meta:
        model = AuthoredEntry
        fields = ["key", "value_type", "value_text", "position"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk is not None:
            value = self.instance.value
            self.initial["value_type"] = _value_type(value)
            self.initial["value_text"] = (
                str(value).lower() if isinstance(value, bool) else str(value)
            )

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data  # what ModelForm.clean returns
        kind, text = data.get("value_type"), data.get("value_text", "")
        try:
            value: Any = _parse_value(kind or "text", text)
        except ValueError as exc:
            raise forms.ValidationError({"value_text": str(exc)}) from None
        try:
            entry = BackgroundEntry(key=data.get("key") or "", value=value)
        except PydanticValidationError as exc:
            raise forms.ValidationError(_first_message(exc)) from None
        self.instance.value = entry.value
        return data


# --- the agent and a section on its own page --------------------------------------------


class RoutingSpecField(forms.ChoiceField):
    """A select of the registered specs. Any submitted key passes the choice check, so
    that the registry's own refusal (which lists the known keys) is the one shown."""

    def valid_value(self, value: Any) -> bool:
        return True


def routing_spec_choices(current: str | None) -> list[tuple[str, str]]:
    """ "none", each registered spec with its version, and ``current`` when it is no
    longer registered (so the page still shows what the agent names)."""
    registered = specs()
    choices = [("", "none")] + [
        (key, f"{key} (version {registered[key].version})") for key in sorted(registered)
    ]
    if current and current not in registered:
        choices.append((current, f"{current} (no longer registered)"))
    return choices


class AgentForm(forms.ModelForm[Agent]):
    routing_spec = RoutingSpecField(
        label="Routing spec",
        required=False,
        help_text="Routes the agent's memories to sections (none: every memory is declined).",
    )

    class Meta:
        model = Agent
        fields = [
            "team",
            "slug",
            "name",
            "persona",
            "tone",
            "objective",
            "manual",
            "routing_spec",
            "recall_pinned_candidates",
            "protected",
            "model",
        ]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        current = self.instance.routing_spec
        field = self.fields["routing_spec"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = routing_spec_choices(current)
        if current and current not in specs():
            field.help_text = (
                f"{current!r} is no longer registered in MEMORY_ROUTING_SPECS: "
                "choose a registered spec or none to save this agent."
            )
        _limit_prose(self, "persona", "tone", "objective", "manual")

    def clean_routing_spec(self) -> str | None:
        key = self.cleaned_data.get("routing_spec") or None
        try:
            return check_spec_key(key)
        except UnknownRoutingSpec as exc:
            message = exc.message
            if key == self.instance.routing_spec:
                message += " This agent names a spec that is no longer registered: "
                message += "choose a registered one or none."
            raise forms.ValidationError(message) from None

    def clean_name(self) -> str:
        name: str = self.cleaned_data["name"]
        if not name.strip():
            raise forms.ValidationError("name must not be blank")
        return name

    def clean_model(self) -> str | None:
        # Blank is "no model" (NULL), as the API's null or a missing key.
        model: str | None = self.cleaned_data.get("model") or None
        if model is not None and (problem := model_problem(model)):
            raise forms.ValidationError(problem)
        return model


class SectionDeclarationForm(forms.ModelForm[SectionDeclaration]):
    """A section on its own page: its id must stay unique among its agent's sections
    (the rows of the agent's page check each other; this checks the stored ones)."""

    class Meta:
        model = SectionDeclaration
        fields = ["agent", "section_id", "title", "promotion"]

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        agent = data.get("agent") or getattr(self.instance, "agent", None)
        section_id = data.get("section_id")
        if agent is not None and section_id:
            taken = SectionDeclaration.objects.filter(agent=agent, section_id=section_id)
            if taken.exclude(pk=self.instance.pk).exists():
                self.add_error("section_id", f"duplicate section id {section_id!r}")
        return data
