"""Routing cases in the admin (SPEC §18.1), through the same operation as the API: an
added, changed or deleted case makes the agent's whole new list, which
``replace_cases`` writes in one transaction with its audit event and score. The form
checks a case as the API does (a save's validation, a name of its own, the limit)
before anything is written."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from pydantic import ValidationError

from lens.actors import Actor
from lens.core.errors import pydantic_problems
from lens.models import Agent
from memory.core.routing_eval import CASES_MAX, Case, CaseInput
from memory.models import RoutingCase
from memory.routing_cases import replace_cases, stored_cases


def _input(case: Case) -> CaseInput:
    return CaseInput.model_validate(case.answer())


class RoutingCaseForm(forms.ModelForm[RoutingCase]):
    expect_section = forms.CharField(
        required=False,
        max_length=64,
        help_text="The section id the case should land in; blank: the spec should decline it.",
    )
    tags = forms.JSONField(required=False, initial=list, help_text='A list: ["a", "b"].')

    class Meta:
        model = RoutingCase
        fields = ["agent", "name", "kind", "content", "label", "tags", "expect_section"]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        agent = data.get("agent") or getattr(self.instance, "agent", None)
        raw = {
            "name": data.get("name") or "",
            "kind": data.get("kind") or "",
            "content": (data.get("content") or "").replace("\r\n", "\n"),
            "tags": data.get("tags") or [],
            "label": data.get("label") or None,
            "expect": {"section": data.get("expect_section") or None},
        }
        try:
            self.case = CaseInput.model_validate(raw)
        except ValidationError as exc:
            for loc, message in pydantic_problems(exc.errors()):
                field = {"expect": "expect_section"}.get(loc.split(".")[0], loc.split(".")[0])
                self.add_error(field if field in self.fields else None, message)
            return data
        if agent is not None:
            others = RoutingCase.objects.filter(agent=agent).exclude(pk=self.instance.pk)
            if others.filter(name=self.case.name).exists():
                self.add_error("name", "Another case of this agent has this name.")
            if self.instance.pk is None and others.count() >= CASES_MAX:
                self.add_error(None, f"An agent holds at most {CASES_MAX:,} routing cases.")
        return data


@admin.register(RoutingCase)
class RoutingCaseAdmin(admin.ModelAdmin[RoutingCase]):
    form = RoutingCaseForm
    list_display = ["name", "agent", "kind", "expect_section", "position"]
    list_filter = ["agent__team"]
    list_select_related = ["agent"]
    search_fields = ["name", "agent__slug", "content"]
    ordering = ["agent", "position"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        # A case belongs to its agent: moving one is deleting it and adding another.
        return ("agent",) if obj is not None else ()

    def save_model(self, request: HttpRequest, obj: RoutingCase, form: Any, change: bool) -> None:
        agent = Agent.objects.get(pk=obj.agent_id)
        cases = [_input(case) for case in stored_cases(agent)]
        if change:
            cases[obj.position] = form.case
        else:
            cases.append(form.case)
        replace_cases(agent, cases, Actor.for_user(request.user))
        # The rows were written anew: the page after this one shows the new row.
        obj.pk = RoutingCase.objects.get(agent=agent, name=form.case.name).pk

    def delete_model(self, request: HttpRequest, obj: RoutingCase) -> None:
        self.delete_queryset(request, RoutingCase.objects.filter(pk=obj.pk))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[RoutingCase]) -> None:
        gone: dict[int, set[str]] = {}
        for agent_id, name in queryset.values_list("agent_id", "name"):
            gone.setdefault(agent_id, set()).add(name)
        for agent in Agent.objects.filter(pk__in=gone):
            kept = [_input(c) for c in stored_cases(agent) if c.name not in gone[agent.pk]]
            replace_cases(agent, kept, Actor.for_user(request.user))
