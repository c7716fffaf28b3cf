"""The forms of Settings › Webhooks: a new endpoint (its URL, the events it wants, grouped
as a person looks for them, and a note), a confirmation, a resend; and the guard that
keeps a reloaded "secret shown once" page from making a second endpoint or rotating
the secret again."""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django import forms
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from lens.core.errors import DomainError, InvalidInput
from web.pages.audit_pages import ACTION_WORDS
from web.pages.toolkit import AppRequest
from webhooks.core.addresses import URL_MAX
from webhooks.core.topics import APPROVAL_PENDING, EVERYTHING, PROMPT_CHANGED
from webhooks.endpoints import DESCRIPTION_MAX, EVENT_TYPES, WebhookUrlRefused

ALL_EVENTS = "All events"
DERIVED_WORDS = {
    APPROVAL_PENDING: "Something starts waiting for approval",
    PROMPT_CHANGED: "An agent's composed prompt changed",
}
# The audit actions' groups, by the prefix of their names, in the order of the product.
GROUP_TITLES = {
    "agent": "Agents",
    "proposal": "Proposals",
    "memory": "Memories",
    "delivery": "Deliveries",
    "kv": "Key/value",
    "token": "API tokens",
    "member": "Members",
    "webhook": "Webhooks",
}


@dataclass(frozen=True)
class EventChoice:
    value: str
    words: str


@dataclass(frozen=True)
class EventGroup:
    key: str
    title: str
    choices: list[EventChoice]


def event_groups() -> list[EventGroup]:
    """Every event type a person may pick, grouped: all of them (``*``), the two that
    are not audit actions, then the audit actions by what they are about."""
    derived = [
        EventChoice(name, DERIVED_WORDS[name]) for name in (APPROVAL_PENDING, PROMPT_CHANGED)
    ]
    groups = [
        EventGroup(
            "all", ALL_EVENTS, [EventChoice(EVERYTHING, "Every event, and any added later")]
        ),
        EventGroup("derived", "Waiting and prompts", derived),
    ]
    by_prefix: dict[str, list[EventChoice]] = {}
    for name in EVENT_TYPES:
        if name in DERIVED_WORDS:
            continue
        by_prefix.setdefault(name.split(".", 1)[0], []).append(
            EventChoice(name, ACTION_WORDS.get(name, name))
        )
    order = list(GROUP_TITLES)
    for prefix in sorted(by_prefix, key=lambda p: (order.index(p) if p in order else 99, p)):
        groups.append(
            EventGroup(prefix, GROUP_TITLES.get(prefix, prefix.capitalize()), by_prefix[prefix])
        )
    return groups


def events_words(events: Iterable[str]) -> list[str]:
    """How an endpoint's event types read on a page."""
    chosen = list(events)
    return [ALL_EVENTS] if EVERYTHING in chosen else chosen


# The settings that let webhooks reach a receiver a developer runs: ``make run`` sets
# both; a deployment keeps both off (docs/operations-and-security.md).
DEVELOPMENT_FLAGS = ("WEBHOOKS_ALLOW_HTTP", "WEBHOOKS_ALLOW_PRIVATE")


def url_help(allow_http: bool, allow_private: bool) -> SafeString:
    """The URL field's hint: which addresses this server calls, and the settings that
    decide it, named so that trying a receiver on this machine needs no searching."""
    schemes = ("http://", "https://") if allow_http else ("https://",)
    scheme = format_html(
        "An {} address", format_html_join(" or ", "<code>{}</code>", ((s,) for s in schemes))
    )
    where = (
        "on this machine, a private network or the public internet"
        if allow_private
        else "on the public internet: private, loopback and link-local addresses are refused"
    )
    allowed = dict(zip(DEVELOPMENT_FLAGS, (allow_http, allow_private), strict=True))
    on = [name for name, value in allowed.items() if value]
    off = [name for name, value in allowed.items() if not value]
    said = format_html("{} {}.", scheme, where)
    if on:
        said = format_html(
            "{} This server runs with {} (as <code>make run</code> sets them): for "
            "development only.",
            said,
            _flags(on),
        )
    if off:
        said = format_html(
            "{} For a receiver on this machine in development, start the server with {} "
            "(<code>make run</code> sets both).",
            said,
            _flags(off),
        )
    return said


def _flags(names: list[str]) -> SafeString:
    return format_html_join(" and ", "<code>{}=1</code>", ((name,) for name in names))


class EndpointForm(forms.Form):
    # Lengths are the operation's to judge (it says which limit and by how much); these
    # only refuse what no browser sends.
    url = forms.CharField(
        max_length=URL_MAX * 2,
        error_messages={"required": "Give the URL the events are sent to (https://…)."},
    )
    events = forms.MultipleChoiceField(
        choices=[(EVERYTHING, ALL_EVENTS), *((name, name) for name in EVENT_TYPES)],
        error_messages={
            "required": "Choose at least one event type, or All events.",
            "invalid_choice": "%(value)s is not an event type.",
        },
    )
    description = forms.CharField(required=False, max_length=DESCRIPTION_MAX, strip=True)

    def clean_events(self) -> list[str]:
        chosen: list[str] = self.cleaned_data["events"]
        # "All events" is every type: the others ticked beside it add nothing.
        return [EVERYTHING] if EVERYTHING in chosen else chosen

    def refused(self, error: DomainError) -> None:
        """Show an operation's refusal where it belongs: beside the URL, the events or
        the description, or above the form."""
        if isinstance(error, WebhookUrlRefused):
            self.add_error("url", error.message)
            return
        if isinstance(error, InvalidInput):
            problems: list[dict[str, Any]] = error.details.get("errors") or []
            field = str(problems[0].get("loc", "")) if problems else ""
            if field in self.fields:
                self.add_error(field, error.message.split(": ", 1)[-1])
                return
        # Too many webhooks, or anything else: about the form as a whole.
        self.add_error(None, error.message)


class ConfirmForm(forms.Form):
    """A confirmation page's button (rotate, delete): without it a post only asks."""

    confirm = forms.BooleanField(required=False)


class ResendForm(forms.Form):
    dispatch = forms.IntegerField(min_value=1, max_value=2**31 - 1)


# --- sent once --------------------------------------------------------------------------

# The hidden field of the forms whose answer shows a secret: a random value per rendered
# form. Reloading that answer posts the form again; the session remembers which values
# were posted (never the secret), so the repeat makes no second endpoint or rotation.
ONCE_FIELD = "once"
_SENT = "webhook_forms_sent"
_SENT_KEPT = 20


def once_value() -> str:
    return secrets.token_urlsafe(16)


def sent_before(request: AppRequest) -> int | None:
    """The endpoint a form with this ``once`` value already made or rotated, if any."""
    value = request.POST.get(ONCE_FIELD, "")
    sent: dict[str, int] = request.session.get(_SENT, {})
    return sent.get(value) if value else None


def remember_sent(request: AppRequest, endpoint_pk: int) -> None:
    value = request.POST.get(ONCE_FIELD, "")
    if not value:
        return
    sent: dict[str, int] = dict(request.session.get(_SENT, {}))
    sent[value[:64]] = endpoint_pk
    request.session[_SENT] = dict(list(sent.items())[-_SENT_KEPT:])
