"""Admin for teams, agents, section declarations and authored entries.

Every form validates through the same pure schema the API uses, so the admin can
never store a declaration the API would refuse.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.forms.models import BaseInlineFormSet
from django.http import HttpRequest
from pydantic import ValidationError as PydanticValidationError

from lens.core.background import BackgroundEntry, duplicates
from lens.models import (
    Agent,
    ApiToken,
    AuthoredEntry,
    AwarenessSource,
    Capability,
    Membership,
    SectionDeclaration,
    Team,
)
from memory.agents import apply_preset
from memory.core.presets import Preset
from memory.registry import UnknownRoutingSpec, check_spec_key, preset_specs

admin.site.site_header = "Composition Lens administration"
admin.site.site_title = "Composition Lens"
admin.site.index_title = "Teams, agents and their declarations"


def _first_message(error: PydanticValidationError) -> str:
    return str(error.errors()[0]["msg"]).removeprefix("Value error, ")


class UniqueNamesFormSet(BaseInlineFormSet):
    """Refuses duplicates of ``unique_field`` among the rows being kept."""

    unique_field = "name"
    label = "name"

    def clean(self) -> None:
        # Before the model formset's own unique check, whose message ("Please correct
        # the duplicate data for ...") does not name the duplicate.
        values = [
            form.cleaned_data[self.unique_field]
            for form in self.forms
            if form.cleaned_data
            and not form.cleaned_data.get("DELETE")
            and self.unique_field in form.cleaned_data
        ]
        if dupes := duplicates(values):
            raise forms.ValidationError(f"duplicate {self.label} {dupes[0]!r}")
        super().clean()


class UniqueInDatabaseFormSet(UniqueNamesFormSet):
    """For fields with a database unique constraint: lets rows swap or reuse values.

    Django saves inline rows one at a time, so swapping two ids (or renaming a row to
    the id of a row deleted in the same save) would trip the constraint halfway. The
    rows that change or go are first moved to placeholders no valid value can equal
    (the admin's save is one transaction, so nobody sees them).
    """

    def save_existing_objects(self, commit: bool = True) -> list[Any]:
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
                model.objects.filter(pk=pk).update(**{self.unique_field: f"~{pk}"})
        return super().save_existing_objects(commit)


class SectionFormSet(UniqueInDatabaseFormSet):
    unique_field = "section_id"
    label = "section id"


class EntryFormSet(UniqueInDatabaseFormSet):
    unique_field = "key"
    label = "entry key"


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


class AuthoredEntryForm(forms.ModelForm):
    """Edits a scalar value as text plus a type, instead of raw JSON."""

    value_type = forms.ChoiceField(choices=VALUE_TYPES, initial="text")
    value_text = forms.CharField(
        label="Value", required=False, widget=forms.Textarea(attrs={"rows": 2, "cols": 60})
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


class AuthoredEntryInline(admin.TabularInline):
    model = AuthoredEntry
    form = AuthoredEntryForm
    formset = EntryFormSet
    extra = 1
    ordering = ["position", "id"]


class SectionDeclarationInline(admin.TabularInline):
    model = SectionDeclaration
    formset = SectionFormSet
    fields = ["section_id", "title", "promotion", "position"]
    extra = 0
    show_change_link = True
    ordering = ["position", "id"]


class CapabilityInline(admin.StackedInline):
    model = Capability
    formset = UniqueNamesFormSet
    fields = ["name", "description", "position"]
    extra = 0


class AwarenessFormSet(UniqueNamesFormSet):
    label = "awareness source name"


class AwarenessSourceInline(admin.TabularInline):
    model = AwarenessSource
    formset = AwarenessFormSet
    fields = ["name", "description", "access_method", "position"]
    extra = 0


class AgentForm(forms.ModelForm):
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
        ]

    def clean_routing_spec(self) -> str | None:
        try:
            return check_spec_key(self.cleaned_data.get("routing_spec") or None)
        except UnknownRoutingSpec as exc:
            raise forms.ValidationError(exc.message) from None

    def clean_name(self) -> str:
        name: str = self.cleaned_data["name"]
        if not name.strip():
            raise forms.ValidationError("name must not be blank")
        return name


@admin.register(Agent)
class AgentAdmin(admin.ModelAdmin):
    form = AgentForm
    list_display = ["name", "slug", "team", "routing_spec", "updated_at"]
    list_filter = ["team"]
    search_fields = ["name", "slug"]
    list_select_related = ["team"]
    fieldsets = [
        (None, {"fields": ["team", "slug", "name", "routing_spec", "recall_pinned_candidates"]}),
        ("Role", {"fields": ["persona", "tone", "objective", "manual"]}),
    ]
    inlines = [SectionDeclarationInline, CapabilityInline, AwarenessSourceInline]

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        actions = super().get_actions(request)
        for spec in preset_specs():
            name = f"apply_preset_{spec.key}"
            description = f"Apply preset {spec.key}: add its sections, select its spec"
            actions[name] = (_preset_action(spec), name, description)
        return actions


def _preset_action(spec: Preset) -> Any:
    def apply(modeladmin: AgentAdmin, request: HttpRequest, queryset: QuerySet[Agent]) -> None:
        for agent in queryset:
            added = apply_preset(agent, spec)
            modeladmin.message_user(
                request,
                f"{agent.slug}: routing spec {agent.routing_spec}; "
                + (
                    f"added sections {', '.join(added)}."
                    if added
                    else "all sections were already declared."
                ),
                messages.SUCCESS,
            )

    return apply


@admin.register(SectionDeclaration)
class SectionDeclarationAdmin(admin.ModelAdmin):
    list_display = ["section_id", "title", "promotion", "agent", "position"]
    list_filter = ["promotion", "agent__team"]
    list_select_related = ["agent"]
    search_fields = ["section_id", "title", "agent__slug"]
    fields = ["agent", "section_id", "title", "promotion", "position"]
    inlines = [AuthoredEntryInline]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        # Moving a section to another agent would orphan its promotion rows' meaning.
        return ["agent"] if obj is not None else []


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 1
    autocomplete_fields = ["user"]


class ApiTokenInline(admin.TabularInline):
    model = ApiToken
    fields = ["name", "prefix", "created_at", "revoked_at"]
    readonly_fields = ["prefix", "created_at"]
    extra = 0
    can_delete = True

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # tokens are issued by the action, which shows the raw value once


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "created_at"]
    search_fields = ["slug", "name"]
    inlines = [MembershipInline, ApiTokenInline]
    actions = ["issue_token"]

    @admin.action(description="Issue an API token (shown once)")
    def issue_token(self, request: HttpRequest, queryset: QuerySet[Team]) -> None:
        for team in queryset:
            _token, raw = ApiToken.objects.issue(team, name=f"admin: {request.user}")
            self.message_user(
                request,
                f"New token for {team.slug} (copy it now, it is not shown again): {raw}",
                messages.WARNING,
            )
