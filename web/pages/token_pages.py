"""Settings › My tokens (SPEC §14 "Whose token"): the API tokens a person holds in the
current team, a form that issues a new one, and ``Revoke`` on each.

Every token here belongs to the person looking: a change made with it is theirs, and
on a protected agent it is proposed by them, who never publishes or rejects it. A person
sees and revokes only their own tokens (anyone else's is not found, 404), checked here
on every view. The raw token is shown once, in the answer of the post that issued it
(never through a redirect, a message or the session), and that answer is not cached.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.cache import add_never_cache_headers
from django.utils.http import urlencode
from django.views.decorators.http import require_http_methods, require_POST

from lens.core.errors import DomainError
from lens.models import Team
from lens.token_issuing import (
    NAME_MAX,
    TOKENS_PER_PERSON,
    Issued,
    TokenNotFound,
    issue_token,
    revoke_own_token,
    tokens_of,
)
from web.pages.toolkit import (
    AppRequest,
    WrongTeam,
    current_team,
    no_team_page,
    use_form_team,
)
from web.pages.webhook_forms import ONCE_FIELD, once_value

NAV = "tokens"
TITLE = "My tokens"
# What the database's integer columns hold: a larger number names no token.
ID_MAX = 2**31 - 1
# Reloading the answer that showed a token posts its form again: the session remembers
# which forms were sent (their ``once`` value, never the token), so a reload issues none.
_SENT = "token_forms_sent"
_SENT_KEPT = 20


class TokenForm(forms.Form):
    # The length is the operation's to judge (it says by how much); this only refuses
    # what no browser sends.
    name = forms.CharField(required=False, max_length=NAME_MAX * 4, strip=True)


def _list_url(team: Team) -> str:
    return f"{reverse('my-tokens')}?{urlencode({'team': team.slug})}"


def _text(message: str, status: int) -> HttpResponse:
    return HttpResponse(message, status=status, content_type="text/plain; charset=utf-8")


@require_http_methods(["GET", "POST"])
@login_required
def my_tokens(request: AppRequest) -> HttpResponse:
    """The person's tokens in the current team and the form that issues one (a post of
    it lands here)."""
    if request.method == "POST":
        return _issue(request)
    team = current_team(request)
    if team is None:
        return no_team_page(request, TITLE, NAV)
    return _page(request, team, TokenForm())


def _issue(request: AppRequest) -> HttpResponse:
    try:
        team = use_form_team(request)
    except WrongTeam as exc:
        return _text(exc.message, 400)
    once = request.POST.get(ONCE_FIELD, "")[:64]
    sent: dict[str, int] = request.session.get(_SENT, {})
    if once and once in sent:
        messages.warning(
            request,
            "This form was sent already: its token was issued then and shown once. Nothing "
            "was issued this time; if you did not keep the token, revoke it and issue another.",
        )
        return redirect(_list_url(team))
    form = TokenForm(request.POST)
    if form.is_valid():
        try:
            issued = issue_token(team, form.cleaned_data["name"], user=request.user)
        except DomainError as error:
            form.add_error("name", error.message)
        else:
            if once:
                request.session[_SENT] = dict(
                    list({**sent, once: issued.token.pk}.items())[-_SENT_KEPT:]
                )
            response = _page(request, team, TokenForm(), issued=issued)
            add_never_cache_headers(response)
            return response
    return _page(request, team, form, status=400)


def _page(
    request: AppRequest,
    team: Team,
    form: TokenForm,
    *,
    issued: Issued | None = None,
    status: int = 200,
) -> HttpResponse:
    live, revoked = tokens_of(team, request.user)
    context: dict[str, Any] = {
        "live": live,
        "revoked": revoked,
        "form": form,
        "issued": issued,
        "once": once_value(),
        "once_field": ONCE_FIELD,
        "name_max": NAME_MAX,
        "tokens_max": TOKENS_PER_PERSON,
        "nav": NAV,
    }
    return render(request, "lens/my_tokens.html", context, status=status)


@require_POST
@login_required
def my_token_revoke(request: AppRequest, pk: int) -> HttpResponse:
    """The person revokes one of their own tokens: refused by the API from the next
    request on. Anyone else's token, or another team's, is not found (404)."""
    try:
        team = use_form_team(request)
    except WrongTeam as exc:
        return _text(exc.message, 400)
    if not 1 <= pk <= ID_MAX:
        raise Http404("No such token")
    try:
        done = revoke_own_token(team, request.user, pk)
    except TokenNotFound:
        raise Http404("No such token") from None
    token = done.token
    said = (
        f"Token {token.prefix}… was revoked already: nothing was changed."
        if done.already
        else f"Token {token.prefix}… revoked: the API refuses it from now on."
    )
    if request.htmx:
        context = {"token": token, "notice": said, "current_team": team}
        return render(request, "lens/my_tokens.html#token_revoked", context)
    (messages.info if done.already else messages.success)(request, said)
    return redirect(_list_url(team))
