"""Webhook endpoints in the admin, through the same operations as the API and the
settings page: adding one is ``create_endpoint`` (the URL guard, the audit event) and
its answer shows the secret once; deleting is ``delete_endpoint`` (the audit event).
An endpoint is not edited in place — no operation changes one, and every change must be
audited — so its page is read-only: a new URL or other events mean a new endpoint. The
page lists the endpoint's recent tries; rotating the secret and resending a message are
on Settings › Webhooks, linked from it."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.cache import add_never_cache_headers
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from lens.actors import Actor
from lens.core.errors import DomainError
from web.pages.webhook_forms import ALL_EVENTS, event_groups, events_words
from webhooks.core.topics import EVERYTHING
from webhooks.endpoints import (
    DESCRIPTION_MAX,
    ENDPOINTS_MAX,
    RECENT_ATTEMPTS,
    WebhookNotFound,
    WebhookUrlRefused,
    check_url,
    create_endpoint,
    delete_endpoint,
    recent_attempts,
    waiting_count,
)
from webhooks.models import Attempt, Dispatch, Endpoint

# What an endpoint's (read-only) page shows: never its secret.
SHOWN = (
    "team",
    "url",
    "events_shown",
    "description",
    "created_by",
    "created_at",
    "health",
    "waiting",
    "recent_tries",
    "manage",
)
# What save_model leaves on the request for the answer: the secret, or why nothing was made.
_SECRET = "_lens_webhook_secret"
_REFUSED = "_lens_webhook_refused"


def _grouped_choices() -> list[tuple[str, list[tuple[str, str]]]]:
    return [
        (
            group.title,
            [(c.value, c.value if c.value != EVERYTHING else ALL_EVENTS) for c in group.choices],
        )
        for group in event_groups()
    ]


class EndpointAddForm(forms.ModelForm[Endpoint]):
    """A new endpoint, checked as the operation checks it before anything is saved, so a
    refused URL shows on the form with nothing written."""

    events = forms.MultipleChoiceField(
        choices=_grouped_choices,
        widget=forms.CheckboxSelectMultiple,
        help_text=f"{ALL_EVENTS} includes every type below and any added later.",
        error_messages={"required": "Choose at least one event type, or All events."},
    )
    description = forms.CharField(required=False, max_length=DESCRIPTION_MAX)

    class Meta:
        model = Endpoint
        fields = ["team", "url", "events", "description"]
        widgets = {"url": forms.TextInput(attrs={"size": 80, "spellcheck": "false"})}
        help_texts = {
            "url": "An https:// address on the public internet; private, loopback and "
            "link-local addresses are refused."
        }

    def clean_events(self) -> list[str]:
        chosen: list[str] = self.cleaned_data["events"]
        return [EVERYTHING] if EVERYTHING in chosen else chosen

    def clean_url(self) -> str:
        url: str = self.cleaned_data["url"]
        try:
            return check_url(url)
        except WebhookUrlRefused as refused:
            raise forms.ValidationError(refused.message) from None

    def clean_team(self) -> Any:
        team = self.cleaned_data["team"]
        if team is not None and Endpoint.objects.filter(team=team).count() >= ENDPOINTS_MAX:
            raise forms.ValidationError(
                f"A team has at most {ENDPOINTS_MAX} webhooks; delete one first."
            )
        return team


@admin.register(Endpoint)
class EndpointAdmin(admin.ModelAdmin[Endpoint]):
    form = EndpointAddForm
    list_display = ["url", "team", "events_shown", "health", "created_by", "created_at"]
    list_filter = ["team"]
    list_select_related = ["team"]
    search_fields = ["url", "description"]

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Read-only: no operation edits an endpoint (delete it and add a new one).
        return False

    def get_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        return ("team", "url", "events", "description") if obj is None else SHOWN

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        return () if obj is None else SHOWN

    @admin.display(description="Events")
    def events_shown(self, endpoint: Endpoint) -> str:
        return ", ".join(events_words(endpoint.events))

    @admin.display(description="Health")
    def health(self, endpoint: Endpoint) -> str:
        if endpoint.failing_since is not None:
            return f"Failing since {endpoint.failing_since:%Y-%m-%d %H:%M} UTC"
        if endpoint.failures_in_a_row:
            return f"{endpoint.failures_in_a_row} failed in a row"
        if endpoint.last_success_at is not None:
            return f"Last success {endpoint.last_success_at:%Y-%m-%d %H:%M} UTC"
        return "Nothing sent yet"

    @admin.display(description="Messages waiting")
    def waiting(self, endpoint: Endpoint) -> int:
        return waiting_count(endpoint)

    @admin.display(description=f"Recent tries (newest {RECENT_ATTEMPTS})")
    def recent_tries(self, endpoint: Endpoint) -> SafeString | str:
        rows = recent_attempts(endpoint)
        if not rows:
            return "None yet."
        body = format_html_join(
            "",
            "<tr><td>{}</td><td><code>{}</code></td><td><code>{}</code></td>"
            "<td>{}</td><td>{} ms</td><td>{}</td></tr>",
            (
                (
                    f"{row.at:%Y-%m-%d %H:%M:%S}",
                    row.dispatch.event_type,
                    row.dispatch.message_id,
                    row.status_code or "no answer",
                    row.duration_ms,
                    row.error or "—",
                )
                for row in rows
            ),
        )
        return format_html(
            '<table class="lens-attempts"><thead><tr><th scope="col">When (UTC)</th>'
            '<th scope="col">Event</th><th scope="col">Message</th><th scope="col">Status</th>'
            '<th scope="col">Took</th><th scope="col">Error</th></tr></thead>'
            "<tbody>{}</tbody></table>",
            body,
        )

    @admin.display(description="Manage")
    def manage(self, endpoint: Endpoint) -> SafeString:
        return format_html(
            'Rotate the secret and resend messages on <a href="{}?team={}">Settings › '
            "Webhooks</a>. To change the URL or the events, add a new webhook and delete "
            "this one.",
            reverse("webhook-detail", args=[endpoint.pk]),
            endpoint.team.slug,
        )

    # --- adding: create_endpoint, and the secret once ------------------------------------

    def save_model(self, request: HttpRequest, obj: Endpoint, form: Any, change: bool) -> None:
        try:
            made = create_endpoint(
                obj.team, Actor.for_user(request.user), obj.url, obj.events, obj.description
            )
        except DomainError as error:  # what changed since the form was checked (a race)
            setattr(request, _REFUSED, error)
            return
        # The admin's own log and answer name the endpoint the operation made.
        for field in Endpoint._meta.concrete_fields:
            setattr(obj, field.attname, getattr(made.endpoint, field.attname))
        obj._state.adding = False
        setattr(request, _SECRET, made.secret)

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        if not hasattr(request, _REFUSED):
            super().save_related(request, form, formsets, change)

    def log_addition(self, request: HttpRequest, obj: Endpoint, message: Any) -> Any:
        if hasattr(request, _REFUSED):
            return None  # nothing was added
        return super().log_addition(request, obj, message)

    def response_add(
        self, request: HttpRequest, obj: Endpoint, post_url_continue: str | None = None
    ) -> HttpResponse:
        refused: DomainError | None = getattr(request, _REFUSED, None)
        if refused is not None:
            self.message_user(request, f"Nothing was added: {refused.message}", messages.ERROR)
            return HttpResponseRedirect(reverse("admin:webhooks_endpoint_add"))
        opts = self.model._meta
        context = {
            **self.admin_site.each_context(request),
            "title": "Webhook added: its secret",
            "endpoint": obj,
            "secret": getattr(request, _SECRET),
            "opts": opts,
            "back": reverse("admin:webhooks_endpoint_changelist"),
            "change_url": reverse("admin:webhooks_endpoint_change", args=[obj.pk]),
        }
        # Only this answer carries the secret: never a message (a cookie), the session or
        # a cache.
        response = TemplateResponse(request, "admin/webhooks/endpoint/secret_shown.html", context)
        add_never_cache_headers(response)
        return response

    # --- deleting: delete_endpoint, audited ----------------------------------------------

    def delete_model(self, request: HttpRequest, obj: Endpoint) -> None:
        with contextlib.suppress(WebhookNotFound):  # gone already: deleted either way
            delete_endpoint(obj.team, Actor.for_user(request.user), obj.pk)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Endpoint]) -> None:
        actor = Actor.for_user(request.user)
        for endpoint in queryset.select_related("team"):
            with contextlib.suppress(WebhookNotFound):
                delete_endpoint(endpoint.team, actor, endpoint.pk)

    def get_deleted_objects(
        self, objs: Iterable[Endpoint] | QuerySet[Endpoint], request: HttpRequest
    ) -> tuple[list[Any], dict[str, int], set[str], list[Any]]:
        # Counts, not a line per message and try: an endpoint keeps 30 days of them.
        endpoints = list(objs)
        counts = {
            "webhook endpoints": len(endpoints),
            "messages (sent or waiting)": Dispatch.objects.filter(endpoint__in=endpoints).count(),
            "tries": Attempt.objects.filter(endpoint__in=endpoints).count(),
        }
        return [str(endpoint) for endpoint in endpoints], counts, set(), []
