"""Settings › Webhooks (SPEC §16): the team's endpoints and a form to add one; an
endpoint's page with its health, its recent tries and ``Resend`` on each; rotating its
secret and deleting it, each behind a confirmation.

Team reviewers (and holders of the review permission) manage webhooks; another member
gets 403 and anyone outside the team 404, checked here on every view, not only by
which links a page shows. A secret is shown once, in the answer of the post that made
it (never through a redirect, a message or the session), and that answer is not cached.
"""

from __future__ import annotations

import contextlib
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.cache import add_never_cache_headers
from django.utils.http import urlencode
from django.views.decorators.http import require_http_methods, require_POST

from lens.actors import Actor
from lens.core.errors import DomainError
from lens.models import Team
from web.pages.toolkit import (
    AppRequest,
    WrongTeam,
    can_review,
    current_team,
    find_linked,
    no_team_page,
    require_team,
    use_form_team,
)
from web.pages.webhook_forms import (
    ONCE_FIELD,
    ConfirmForm,
    EndpointForm,
    ResendForm,
    event_groups,
    events_words,
    once_value,
    remember_sent,
    sent_before,
    url_help,
)
from webhooks.core.addresses import URL_MAX
from webhooks.endpoints import (
    DESCRIPTION_MAX,
    ENDPOINTS_MAX,
    RECENT_ATTEMPTS,
    MessageNotFound,
    WebhookNotFound,
    check_url,
    create_endpoint,
    delete_endpoint,
    get_endpoint,
    list_endpoints,
    recent_attempts,
    resend,
    rotate_secret,
    waiting_count,
    waiting_counts,
)
from webhooks.models import Endpoint

# What the database's integer columns hold: a larger number names no endpoint.
ID_MAX = 2**31 - 1
# Failed tries in a row after which the page warns, before the endpoint is failing.
WARN_AFTER = 3
NAV = "webhooks"


def require_manager(request: AppRequest, team: Team) -> None:
    # Checked in the view, not only by hiding links: a form can be posted by hand.
    if not can_review(request.user, team):
        raise PermissionDenied(
            f"Managing the webhooks of team {team.slug} needs the reviewer role in it "
            "(or the memory.approve_promotion permission)."
        )


def get_endpoint_for_user(request: AppRequest, pk: int) -> Endpoint:
    """Endpoint ``pk`` of the current team (or, for a link, of the user's team that has
    it, which becomes the current team); 404 for anyone else."""
    if not 1 <= pk <= ID_MAX:
        raise Http404("No such webhook")

    def find(team: Team) -> Endpoint:
        try:
            return get_endpoint(team, pk)
        except WebhookNotFound:
            raise Http404("No such webhook") from None

    return find_linked(request, "webhook", find, Endpoint.objects.filter(pk=pk), "team")


def host_of(endpoint: Endpoint) -> str:
    """The URL's host, as the audit log names an endpoint."""
    return endpoint.url.split("://", 1)[-1].split("/", 1)[0].rsplit("@", 1)[-1]


def _detail_url(endpoint: Endpoint, team: Team) -> str:
    return f"{reverse('webhook-detail', args=[endpoint.pk])}?{urlencode({'team': team.slug})}"


def _list_url(team: Team) -> str:
    return f"{reverse('webhook-list')}?{urlencode({'team': team.slug})}"


def _wrong_team(exc: WrongTeam) -> HttpResponse:
    return HttpResponse(exc.message, status=400, content_type="text/plain; charset=utf-8")


@require_http_methods(["GET", "POST"])
@login_required
def webhook_list(request: AppRequest) -> HttpResponse:
    """The team's endpoints and the form that adds one (a post of it lands here)."""
    if request.method == "POST":
        return _create(request)
    team = current_team(request)
    if team is None:
        return no_team_page(request, "Webhooks", NAV)
    require_manager(request, team)
    return _list_page(request, team, EndpointForm())


def _create(request: AppRequest) -> HttpResponse:
    try:
        team = use_form_team(request)
    except WrongTeam as exc:
        return _wrong_team(exc)
    require_manager(request, team)
    earlier = sent_before(request)
    if earlier is not None:
        return _sent_already(request, team, earlier, "made")
    form = EndpointForm(request.POST)
    if form.is_valid():
        data = form.cleaned_data
        actor = Actor.for_user(request.user)
        try:
            made = create_endpoint(team, actor, data["url"], data["events"], data["description"])
        except DomainError as error:
            form.refused(error)
        else:
            remember_sent(request, made.endpoint.pk)
            return _detail_page(request, made.endpoint, secret=made.secret, made=True)
    elif "url" in form.cleaned_data:
        # Every problem at once: the URL is judged even when the events are missing.
        try:
            check_url(form.cleaned_data["url"])
        except DomainError as error:
            form.refused(error)
    return _list_page(request, team, form, status=400)


def _sent_already(request: AppRequest, team: Team, pk: int, what: str) -> HttpResponse:
    """A form whose answer showed a secret, posted again (a reload): nothing is done."""
    endpoint = Endpoint.objects.filter(team=team, pk=pk).first()
    if endpoint is None:
        messages.warning(request, "This form was sent already; nothing was changed.")
        return redirect(_list_url(team))
    done = (
        f"webhook {host_of(endpoint)} was made then and its secret shown once"
        if what == "made"
        else f"the secret of {host_of(endpoint)} was rotated then and the new one shown once"
    )
    messages.warning(
        request,
        f"This form was sent already: {done}. Nothing was changed this time; if you did not "
        "keep the secret, rotate it.",
    )
    return redirect(_detail_url(endpoint, team))


def _list_page(
    request: AppRequest, team: Team, form: EndpointForm, status: int = 200
) -> HttpResponse:
    waiting = waiting_counts(team)
    rows = [
        {
            "endpoint": endpoint,
            "events": events_words(endpoint.events),
            "waiting": waiting.get(endpoint.pk, 0),
        }
        for endpoint in list_endpoints(team)
    ]
    chosen = form["events"].value() if form.is_bound else []
    context: dict[str, Any] = {
        "rows": rows,
        "form": form,
        "groups": event_groups(),
        "chosen": set(chosen or []),
        "once": once_value(),
        "once_field": ONCE_FIELD,
        "url_max": URL_MAX,
        "url_help": url_help(settings.WEBHOOKS_ALLOW_HTTP, settings.WEBHOOKS_ALLOW_PRIVATE),
        "description_max": DESCRIPTION_MAX,
        "endpoints_max": ENDPOINTS_MAX,
        "warn_after": WARN_AFTER,
        "nav": NAV,
    }
    return render(request, "webhooks/webhook_list.html", context, status=status)


@require_http_methods(["GET"])
@login_required
def webhook_detail(request: AppRequest, pk: int) -> HttpResponse:
    endpoint = get_endpoint_for_user(request, pk)
    require_manager(request, require_team(request))
    return _detail_page(request, endpoint)


def took(duration_ms: int) -> str:
    """How long a try took, as a person reads it: ``84 ms``, ``2.3 s``."""
    return f"{duration_ms} ms" if duration_ms < 1000 else f"{duration_ms / 1000:.1f} s"


def _detail_page(
    request: AppRequest,
    endpoint: Endpoint,
    *,
    secret: str = "",
    made: bool = False,
    rotated: bool = False,
) -> HttpResponse:
    attempts = [
        {"attempt": attempt, "took": took(attempt.duration_ms)}
        for attempt in recent_attempts(endpoint)
    ]
    context = {
        "endpoint": endpoint,
        "host": host_of(endpoint),
        "events": events_words(endpoint.events),
        "attempts": attempts,
        "recent_max": RECENT_ATTEMPTS,
        "waiting": waiting_count(endpoint),
        "warn_after": WARN_AFTER,
        "secret": secret,
        "made": made,
        "rotated": rotated,
        "nav": NAV,
    }
    response = render(request, "webhooks/webhook_detail.html", context)
    if secret:
        # Shown once: no cache, the browser's included, keeps this answer.
        add_never_cache_headers(response)
    return response


def _confirmed(request: AppRequest, pk: int, action: str) -> tuple[Team, Endpoint] | HttpResponse:
    """A manager's confirmed post of ``action`` on endpoint ``pk``: its team and the
    endpoint; otherwise the answer to give (the confirmation, or a wrong team's 400)."""
    if request.method == "GET":
        endpoint = get_endpoint_for_user(request, pk)
        require_manager(request, require_team(request))
        return _confirm(request, endpoint, action)
    try:
        team = use_form_team(request)
    except WrongTeam as exc:
        return _wrong_team(exc)
    endpoint = get_endpoint_for_user(request, pk)
    require_manager(request, team)
    form = ConfirmForm(request.POST)
    if not form.is_valid() or not form.cleaned_data["confirm"]:
        return _confirm(request, endpoint, action)
    return team, endpoint


@require_http_methods(["GET", "POST"])
@login_required
def webhook_rotate(request: AppRequest, pk: int) -> HttpResponse:
    """The confirmation (GET, or a post without ``confirm``), then a new secret, shown
    on the answer once; the old one keeps signing beside it for a day."""
    confirmed = _confirmed(request, pk, "rotate")
    if isinstance(confirmed, HttpResponse):
        return confirmed
    team, endpoint = confirmed
    if sent_before(request) == endpoint.pk:
        return _sent_already(request, team, endpoint.pk, "rotated")
    try:
        rotated = rotate_secret(team, Actor.for_user(request.user), endpoint.pk)
    except WebhookNotFound:  # deleted meanwhile
        raise Http404("No such webhook") from None
    remember_sent(request, endpoint.pk)
    return _detail_page(request, rotated.endpoint, secret=rotated.secret, rotated=True)


@require_http_methods(["GET", "POST"])
@login_required
def webhook_delete(request: AppRequest, pk: int) -> HttpResponse:
    """The confirmation (GET, or a post without ``confirm``), then the endpoint goes, with
    the messages still waiting for it."""
    confirmed = _confirmed(request, pk, "delete")
    if isinstance(confirmed, HttpResponse):
        return confirmed
    team, endpoint = confirmed
    # Gone already when another reviewer was quicker: deleted either way.
    with contextlib.suppress(WebhookNotFound):
        delete_endpoint(team, Actor.for_user(request.user), endpoint.pk)
    messages.success(request, f"Webhook {host_of(endpoint)} deleted: nothing more is sent to it.")
    return redirect(_list_url(team))


def _confirm(request: AppRequest, endpoint: Endpoint, action: str) -> HttpResponse:
    context = {
        "endpoint": endpoint,
        "host": host_of(endpoint),
        "action": action,
        "waiting": waiting_count(endpoint),
        "once": once_value(),
        "once_field": ONCE_FIELD,
        "nav": NAV,
    }
    return render(request, "webhooks/webhook_confirm.html", context)


@require_POST
@login_required
def webhook_resend(request: AppRequest, pk: int) -> HttpResponse:
    """Send one message again now, with its id and body. With htmx the row's button
    becomes what happened (and the waiting count follows); without, the page again."""
    try:
        team = use_form_team(request)
    except WrongTeam as exc:
        return _wrong_team(exc)
    endpoint = get_endpoint_for_user(request, pk)
    require_manager(request, team)
    form = ResendForm(request.POST)
    if not form.is_valid():
        return HttpResponse(
            "Name the message to send again.", status=400, content_type="text/plain; charset=utf-8"
        )
    try:
        again = resend(team, endpoint.pk, form.cleaned_data["dispatch"])
    except MessageNotFound as error:
        if request.htmx:
            context = {"problem": error.message, "waiting": waiting_count(endpoint)}
            return render(request, "webhooks/webhook_detail.html#resent", context)
        messages.error(request, f"{error.message} Nothing was sent.")
        return redirect(_detail_url(endpoint, team))
    if request.htmx:
        context = {"again": again, "waiting": waiting_count(endpoint), "oob": True}
        return render(request, "webhooks/webhook_detail.html#resent", context)
    messages.success(
        request, f"Message {again.message_id} ({again.event_type}) is queued to be sent again now."
    )
    return redirect(_detail_url(endpoint, team))
