"""Admin for teams, agents, section declarations and authored entries.

Every form validates with the API's rules (``web.admin.declaration_forms``); rows are put in order
with arrows (``web.admin.ordering``); a section's entries are one click from its agent.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db import transaction
from django.db.models import Count, Max, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.cache import add_never_cache_headers
from django.utils.html import format_html

from lens.actors import Actor
from lens.audit import Entry, append_one
from lens.models import (
    Agent,
    ApiToken,
    AuthoredEntry,
    AwarenessSource,
    Capability,
    Membership,
    Proposal,
    SectionDeclaration,
    Team,
    Via,
)
from lens.proposals import Changing, Recorded, start_change
from memory.composed import current_composition
from memory.configuring import apply_preset
from memory.core.composition import counts_words
from memory.core.presets import Preset
from memory.registry import preset_specs
from web.admin.declaration_forms import (
    AgentForm,
    AuthoredEntryForm,
    AwarenessForm,
    AwarenessFormSet,
    CapabilityForm,
    CapabilityFormSet,
    EntryFormSet,
    SectionDeclarationForm,
    SectionFormSet,
    SectionRowForm,
)
from web.admin.effect_preview import Previewed, preview_response, previewed, wants_preview
from web.admin.line_breaks import AsTypedFields, LineBreaksAdmin
from web.admin.ordering import MOVE_FIELD, OrderedRowsAdmin
from web.admin.row_names import NamedRowsInline
from web.pages.login_forms import ThrottledAdminLogin

admin.site.site_header = "Composition Lens administration"
admin.site.site_title = "Composition Lens"
admin.site.index_title = "Teams, agents and their declarations"
# The admin's sign-in is throttled like the dashboard's (lens/serving/throttle.py).
admin.site.login_form = ThrottledAdminLogin


def agent_change_url(agent_pk: int) -> str:
    return reverse("admin:lens_agent_change", args=[agent_pk])


def section_change_url(section_pk: int) -> str:
    return reverse("admin:lens_sectiondeclaration_change", args=[section_pk])


class AuthoredEntryInline(
    AsTypedFields[AuthoredEntry], NamedRowsInline[AuthoredEntry, SectionDeclaration]
):
    model = AuthoredEntry
    form = AuthoredEntryForm
    formset = EntryFormSet
    extra = 1
    ordering = ["position", "id"]


class SectionDeclarationInline(
    AsTypedFields[SectionDeclaration], NamedRowsInline[SectionDeclaration, Agent]
):
    model = SectionDeclaration
    form = SectionRowForm
    formset = SectionFormSet
    fields = ["section_id", "title", "promotion", "entries_link", "position"]
    readonly_fields = ["entries_link"]
    extra = 0
    ordering = ["position", "id"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[SectionDeclaration]:
        # One query for every row's count, however many sections the agent declares.
        return super().get_queryset(request).annotate(entry_count=Count("entries"))

    @admin.display(description="Authored entries")
    def entries_link(self, section: SectionDeclaration) -> str:
        if section.pk is None:
            return "Save the agent, then add entries."
        count = getattr(section, "entry_count", None)
        if count is None:
            count = section.entries.count()
        return format_html(
            '<span class="lens-entry-count">{} {}</span> '
            '<a href="{}" class="lens-entries-link" aria-label="Edit entries of {}">'
            "Edit entries</a>",
            count,
            "entry" if count == 1 else "entries",
            section_change_url(section.pk),
            section.title,
        )


class CapabilityInline(AsTypedFields[Capability], admin.StackedInline[Capability, Agent]):
    model = Capability
    form = CapabilityForm
    formset = CapabilityFormSet
    fields = ["name", "description", "position"]
    extra = 0
    ordering = ["position", "id"]


class AwarenessSourceInline(
    AsTypedFields[AwarenessSource], NamedRowsInline[AwarenessSource, Agent]
):
    model = AwarenessSource
    form = AwarenessForm
    formset = AwarenessFormSet
    fields = ["name", "description", "access_method", "position"]
    extra = 0
    ordering = ["position", "id"]


# The change in progress on this request (``lens.proposals.start_change``), and the
# proposal it became: kept on the request, since one ModelAdmin serves every thread.
_CHANGING = "_lens_changing"
_PROPOSED = "_lens_proposed"


class RecordsRevisions(admin.ModelAdmin[Any]):
    """Every change of an agent's declarations made here writes its revision (SPEC §14)
    in the admin's own transaction (its change and delete views are atomic), once the
    form and all its inlines are saved; a save that changes nothing writes none.

    On a protected agent the change is undone and proposed instead: the admin says so,
    links the proposal, and logs no change that did not happen."""

    def agent_of(self, obj: Any) -> Agent:
        return obj if isinstance(obj, Agent) else obj.agent

    def report(self, request: HttpRequest, agent: Agent, recorded: Recorded) -> None:
        if recorded.proposal is not None:
            setattr(request, _PROPOSED, recorded.proposal)
            self.message_user(
                request,
                format_html(
                    "This agent is protected: your change was proposed, not applied. "
                    '<a href="{}">Proposal {}</a> waits for another reviewer of the team.',
                    reverse("proposal", args=[recorded.proposal.pk]),
                    recorded.proposal.pk,
                ),
                messages.WARNING,
            )
        elif recorded.revision is not None:
            self.message_user(
                request,
                f"{agent.name}: revision {recorded.revision.number} recorded.",
                messages.INFO,
            )

    def proposed(self, request: HttpRequest) -> Proposal | None:
        found: Proposal | None = getattr(request, _PROPOSED, None)
        return found

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        # Before the row is written: a protected agent's change is undone to this point.
        agent = self.agent_of(obj) if change or not isinstance(obj, Agent) else None
        setattr(request, _CHANGING, start_change(agent))
        super().save_model(request, obj, form, change)

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        super().save_related(request, form, formsets, change)
        changing: Changing = getattr(request, _CHANGING)
        agent = self.agent_of(form.instance)
        if change and wants_preview(request):
            raise previewed(agent)  # rolls the admin's transaction back whole
        self.report(request, agent, changing.record(agent, Actor.for_user(request.user), Via.ADMIN))

    def changeform_view(
        self,
        request: HttpRequest,
        object_id: str | None = None,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        """ "Preview the effect" (``web.admin.effect_preview``): the forms save as usual,
        then the transaction rolls back and the change is asked about instead. A form
        that does not validate is shown with its errors, as on Save."""
        if object_id is None or not wants_preview(request):
            return super().changeform_view(request, object_id, form_url, extra_context)
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except Previewed as found:
            context = {**self.admin_site.each_context(request), "opts": self.model._meta}
            return preview_response(request, found, context)

    def log_change(self, request: HttpRequest, obj: Any, message: Any) -> Any:
        if self.proposed(request) is None:
            return super().log_change(request, obj, message)
        return None  # nothing changed

    def log_addition(self, request: HttpRequest, obj: Any, message: Any) -> Any:
        if self.proposed(request) is None:
            return super().log_addition(request, obj, message)
        return None

    def response_change(self, request: HttpRequest, obj: Any) -> HttpResponse:
        if self.proposed(request) is None:
            return super().response_change(request, obj)
        # Back to the agent as it still reads, with the message saying why.
        return HttpResponseRedirect(agent_change_url(self.agent_of(obj).pk))

    def response_add(
        self, request: HttpRequest, obj: Any, post_url_continue: str | None = None
    ) -> HttpResponse:
        if self.proposed(request) is None:
            return super().response_add(request, obj, post_url_continue)
        return HttpResponseRedirect(agent_change_url(self.agent_of(obj).pk))


@admin.register(Agent)
class AgentAdmin(RecordsRevisions, LineBreaksAdmin[Agent], OrderedRowsAdmin[Agent]):
    form = AgentForm
    list_display = ["name", "slug", "team", "routing_spec", "updated_at"]
    list_filter = ["team"]
    search_fields = ["name", "slug"]
    list_select_related = ["team"]
    fieldsets = [
        (
            None,
            {
                "fields": [
                    "team",
                    "slug",
                    "name",
                    "routing_spec",
                    "recall_pinned_candidates",
                    "protected",
                    "model",
                    "counts",
                ]
            },
        ),
        ("Role", {"fields": ["persona", "tone", "objective", "manual"]}),
    ]
    readonly_fields = ["counts"]
    inlines = [SectionDeclarationInline, CapabilityInline, AwarenessSourceInline]

    @admin.display(description="Counts")
    def counts(self, agent: Agent) -> str:
        """``N sections · M entries`` as the lens and the agents list count them, and what
        each number holds: the section rows below list authored entries only."""
        if agent.pk is None:
            return "Counted once the agent is saved."
        composition = current_composition(agent)
        return f"{composition.counts.label()} ({counts_words(composition)})"

    def delete_model(self, request: HttpRequest, obj: Agent) -> None:
        with transaction.atomic():
            _log_deleted(request, [obj])
            super().delete_model(request, obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Agent]) -> None:
        with transaction.atomic():
            _log_deleted(request, list(queryset))
            super().delete_queryset(request, queryset)

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        actions = super().get_actions(request)
        for spec in preset_specs():
            name = f"apply_preset_{spec.key}"
            description = f"Apply preset {spec.key}: add its sections, select its spec"
            actions[name] = (_preset_action(spec), name, description)
        return actions


def _log_deleted(request: HttpRequest, agents: list[Agent]) -> None:
    actor = Actor.for_user(request.user)
    for agent in agents:
        entry = Entry("agent.deleted", "agent", agent.slug, agent.slug, {"agent_id": agent.pk})
        append_one(agent.team_id, actor, entry)


def _preset_action(spec: Preset) -> Any:
    def apply(modeladmin: AgentAdmin, request: HttpRequest, queryset: QuerySet[Agent]) -> None:
        for agent in queryset:
            applied = apply_preset(agent, spec, Actor.for_user(request.user))
            if applied.recorded.proposal is not None:
                modeladmin.report(request, agent, applied.recorded)
                continue
            modeladmin.message_user(
                request,
                f"{agent.slug}: routing spec {agent.routing_spec}; "
                + (
                    f"added sections {', '.join(applied.added)}."
                    if applied.added
                    else "all sections were already declared."
                ),
                messages.SUCCESS,
            )

    return apply


@admin.register(SectionDeclaration)
class SectionDeclarationAdmin(
    RecordsRevisions, LineBreaksAdmin[SectionDeclaration], OrderedRowsAdmin[SectionDeclaration]
):
    form = SectionDeclarationForm
    list_display = ["section_id", "title", "promotion", "agent", "position"]
    list_filter = ["promotion", "agent__team"]
    list_select_related = ["agent"]
    search_fields = ["section_id", "title", "agent__slug"]
    inlines = [AuthoredEntryInline]

    def get_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        fields = ("agent", "section_id", "title", "promotion")
        return fields if obj is None else (*fields, "order")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        # Moving a section to another agent would orphan its promotion rows' meaning;
        # its place among its agent's sections is set with the arrows on the agent.
        return ("agent", "order") if obj is not None else ()

    @admin.display(description="Order")
    def order(self, section: SectionDeclaration) -> str:
        count = SectionDeclaration.objects.filter(agent_id=section.agent_id).count()
        return format_html(
            '{} of {} · <a href="{}#sections-group">move it on {}</a>',
            section.position + 1,
            count,
            agent_change_url(section.agent_id),
            section.agent.name,
        )

    def save_model(
        self, request: HttpRequest, obj: SectionDeclaration, form: Any, change: bool
    ) -> None:
        if not change:
            # A section added on its own page goes after its agent's last one.
            top = SectionDeclaration.objects.filter(agent_id=obj.agent_id).aggregate(
                top=Max("position")
            )["top"]
            obj.position = 0 if top is None else top + 1
        super().save_model(request, obj, form, change)

    def delete_model(self, request: HttpRequest, obj: SectionDeclaration) -> None:
        agent = obj.agent
        changing = start_change(agent)
        super().delete_model(request, obj)
        self.report(request, agent, changing.record(agent, Actor.for_user(request.user), Via.ADMIN))

    def log_deletions(self, request: HttpRequest, queryset: Any) -> Any:
        # Logged before the rows go; a protected agent's section stays (it is proposed).
        kept: Any = [obj for obj in queryset if not obj.agent.protected]  # log_actions iterates
        return super().log_deletions(request, kept) if kept else None

    def response_delete(self, request: HttpRequest, obj_display: str, obj_id: Any) -> HttpResponse:
        proposal = self.proposed(request)
        if proposal is None:
            return super().response_delete(request, obj_display, obj_id)
        return HttpResponseRedirect(agent_change_url(proposal.agent_id))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[SectionDeclaration]) -> None:
        # "Delete selected": one revision (or proposal) for each agent that lost sections.
        actor = Actor.for_user(request.user)
        with transaction.atomic():
            agents = list(Agent.objects.filter(sections__in=queryset).distinct())
            for agent in agents:
                changing = start_change(agent)
                super().delete_queryset(request, queryset.filter(agent=agent))
                self.report(request, agent, changing.record(agent, actor, Via.ADMIN))

    def response_change(self, request: HttpRequest, obj: SectionDeclaration) -> HttpResponse:
        response = super().response_change(request, obj)
        kept_here = ("_continue", "_addanother", "_saveasnew", MOVE_FIELD, "_popup")
        if not any(name in request.POST for name in kept_here):
            # A section is edited from its agent's page: "Save" goes back there.
            return HttpResponseRedirect(f"{agent_change_url(obj.agent_id)}#sections-group")
        return response


class MembershipInline(AsTypedFields[Membership], NamedRowsInline[Membership, Team]):
    model = Membership
    fields = ["user", "role"]
    extra = 1
    autocomplete_fields = ["user"]


class ApiTokenInline(AsTypedFields[ApiToken], NamedRowsInline[ApiToken, Team]):
    model = ApiToken
    # Whose a token is, shown, never edited: a person's token must not become a service
    # token (or someone else's), whose proposals its holder could then decide.
    fields = ["name", "prefix", "user", "created_at", "revoked_at"]
    readonly_fields = ["prefix", "user", "created_at"]
    extra = 0
    can_delete = True

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # tokens are issued by the action, which shows the raw value once


@admin.register(Team)
class TeamAdmin(LineBreaksAdmin[Team]):
    list_display = ["slug", "name", "created_at"]
    search_fields = ["slug", "name"]
    inlines = [MembershipInline, ApiTokenInline]
    actions = ["issue_token"]

    @admin.action(description="Issue an API token (shown once)")
    def issue_token(self, request: HttpRequest, queryset: QuerySet[Team]) -> HttpResponse:
        """A page showing each new token once. Only this response carries the raw value:
        never a message (a cookie, signed but readable), a session or a cache."""
        issued = [
            (team, ApiToken.objects.issue(team, name=f"admin: {request.user}")[1])
            for team in queryset.order_by("slug")
        ]
        context = {
            **self.admin_site.each_context(request),
            "title": "New API tokens" if len(issued) > 1 else "New API token",
            "issued": issued,
            "opts": self.model._meta,
            "back": reverse("admin:lens_team_changelist"),
        }
        response = TemplateResponse(request, "admin/lens/team/token_issued.html", context)
        add_never_cache_headers(response)
        return response
