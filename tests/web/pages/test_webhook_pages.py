"""Settings › Webhooks (SPEC §16): a team's reviewers list, add, inspect, rotate, delete
and resend; another member gets 403, anyone outside the team 404, nobody signed in the
login page. A secret is shown once, on the answer of the post that made it; a refused
URL shows why on the form, keeps what was typed and writes nothing."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.contrib.sessions.models import Session
from django.test import Client
from django.utils import timezone

from kvstore import store
from lens.actors import SYSTEM
from lens.models import AuditEvent, Membership, Role, Team
from tests.factories import Unchanged, logged_in, make_user
from tests.pages import Dom, alert_text, buttons, dom, fragment, inside
from tests.webhooks.hooks import hook, work
from tests.webhooks.receiver import receiving
from webhooks.endpoints import create_endpoint
from webhooks.models import Attempt, Dispatch, Endpoint

pytestmark = pytest.mark.django_db

PUBLIC = "https://93.184.215.14/hooks/lens"  # a literal public address: no DNS needed
LIST = "/settings/webhooks/"
SESSIONS = ("sessions.Session",)


@pytest.fixture
def ria(team: Team) -> User:
    """A reviewer of acme by role, without the global permission."""
    user = make_user("ria", team)
    Membership.objects.filter(user=user, team=team).update(role=Role.REVIEWER)
    return user


@pytest.fixture
def ria_client(ria: User) -> Client:
    return logged_in(ria)


@pytest.fixture
def endpoint(team: Team) -> Endpoint:
    return create_endpoint(team, SYSTEM, PUBLIC, ["*"], "billing relay").endpoint


def detail(endpoint: Endpoint) -> str:
    return f"{LIST}{endpoint.pk}/"


def add(client: Client, **fields: Any) -> Any:
    data: dict[str, Any] = {"team": "acme", "url": PUBLIC, "events": ["*"], **fields}
    return client.post(LIST, data)


def shown_secret(page: Dom) -> str:
    return page.one("data-secret").squashed


def field_error(page: Dom, name: str) -> str:
    return page.one("data-field-error", name).squashed


# --- who may look -----------------------------------------------------------------------


def pages_of(endpoint: Endpoint) -> list[str]:
    return [LIST, detail(endpoint), f"{detail(endpoint)}rotate/", f"{detail(endpoint)}delete/"]


@pytest.mark.parametrize("who", ["ria_client", "reviewer_client", "admin_client"])
def test_reviewers_and_superusers_of_the_team_see_every_page(
    request: pytest.FixtureRequest, who: str, endpoint: Endpoint
) -> None:
    client: Client = request.getfixturevalue(who)
    for path in pages_of(endpoint):
        assert client.get(path).status_code == 200, path


def test_a_member_who_is_not_a_reviewer_gets_403_and_changes_nothing(
    viewer_client: Client, endpoint: Endpoint
) -> None:
    for path in pages_of(endpoint):
        response = viewer_client.get(path)
        assert response.status_code == 403, path
        assert "reviewer role" in response.content.decode()
    unchanged = Unchanged(ignore=SESSIONS)
    posts: list[tuple[str, dict[str, Any]]] = [
        (LIST, {"url": PUBLIC, "events": ["*"]}),
        (f"{detail(endpoint)}rotate/", {"confirm": "on"}),
        (f"{detail(endpoint)}delete/", {"confirm": "on"}),
        (f"{detail(endpoint)}resend/", {"dispatch": str(Dispatch.objects.get().pk)}),
    ]
    for path, data in posts:
        assert viewer_client.post(path, {"team": "acme", **data}).status_code == 403, path
    unchanged.check()


def test_someone_outside_the_team_gets_404(stranger_client: Client, endpoint: Endpoint) -> None:
    assert stranger_client.get(f"{LIST}?team=acme").status_code == 404
    for path in pages_of(endpoint)[1:]:
        assert stranger_client.get(path).status_code == 404, path
    unchanged = Unchanged(ignore=SESSIONS)
    # A form for their own team names an endpoint of acme: not found there.
    for action in ("rotate", "delete", "resend"):
        data = {"team": "globex", "confirm": "on", "dispatch": "1"}
        assert stranger_client.post(f"{detail(endpoint)}{action}/", data).status_code == 404
    # A form that claims acme: refused before anything is looked up.
    assert stranger_client.post(LIST, {"team": "acme", "url": PUBLIC}).status_code == 400
    unchanged.check()


def test_nobody_signed_in_is_sent_to_the_login_page(client: Client, endpoint: Endpoint) -> None:
    for path in pages_of(endpoint):
        response = client.get(path)
        assert response.status_code == 302, path
        assert response["Location"].startswith("/accounts/login/?next=")
    assert client.post(LIST, {"team": "acme", "url": PUBLIC}).status_code == 302
    assert Endpoint.objects.count() == 1


def test_a_user_in_no_team_sees_how_to_join_one(db: None) -> None:
    loner = logged_in(make_user("loner"))
    page = dom(loner.get(LIST))
    assert page.all("data-no-team")


def test_the_navigation_links_webhooks_for_reviewers_only(
    ria_client: Client, reviewer_client: Client, admin_client: Client, viewer_client: Client
) -> None:
    for client in (ria_client, reviewer_client, admin_client):
        assert dom(client.get("/")).links("Webhooks") == [LIST]
    assert dom(viewer_client.get("/")).links("Webhooks") == []


# --- the list and the form --------------------------------------------------------------


def test_the_list_shows_each_endpoint_with_its_health(ria_client: Client, team: Team) -> None:
    ok = create_endpoint(team, SYSTEM, PUBLIC, ["prompt.changed"], "runtime").endpoint
    shaky = create_endpoint(team, SYSTEM, f"{PUBLIC}/2", ["kv.written"]).endpoint
    down = create_endpoint(team, SYSTEM, f"{PUBLIC}/3", ["*"]).endpoint
    Endpoint.objects.filter(pk=shaky.pk).update(failures_in_a_row=4)
    Endpoint.objects.filter(pk=down.pk).update(failing_since=timezone.now(), failures_in_a_row=9)

    page = dom(ria_client.get(LIST))
    cards = {e.get("data-webhook-id"): e for e in page.all("data-webhook-id")}
    assert list(cards) == [str(ok.pk), str(shaky.pk), str(down.pk)]
    health = {pk: card.get("data-webhook-health") for pk, card in cards.items()}
    assert health == {str(ok.pk): "ok", str(shaky.pk): "warning", str(down.pk): "failing"}
    assert "runtime" in cards[str(ok.pk)].squashed
    assert "prompt.changed" in cards[str(ok.pk)].squashed
    assert "All events" in cards[str(down.pk)].squashed
    assert "Failing since" in cards[str(down.pk)].squashed
    assert "4 failed in a row" in cards[str(shaky.pk)].squashed
    # The down endpoint wants every event: its own creation and the two after it wait.
    assert inside(cards[str(down.pk)], "span", data_webhook_waiting="1")
    assert page.links(PUBLIC) == [detail(ok)]


def test_the_form_groups_every_event_type(ria_client: Client) -> None:
    page = dom(ria_client.get(LIST))
    form = page.one("data-webhook-form")
    values = [e.get("value") for e in inside(form, "input", type="checkbox")]
    assert values[:3] == ["*", "approval.pending", "prompt.changed"]
    assert {"memory.approved", "kv.written", "webhook.rotated"} <= set(values)
    legends = [e.squashed for e in form.descendants() if e.tag == "legend"]
    assert legends[:4] == ["Events", "All events", "Waiting and prompts", "Agents"]
    assert buttons(form) == ["Add webhook"]


def test_adding_a_webhook_shows_its_secret_once_and_never_again(
    ria_client: Client, team: Team
) -> None:
    response = add(ria_client, events=["prompt.changed", "approval.pending"], description="rt")
    page = dom(response)
    secret = shown_secret(page)
    made = Endpoint.objects.get()
    assert secret.startswith("whsec_")
    assert made.secret == secret
    assert (made.url, made.events, made.description) == (
        PUBLIC,
        ["prompt.changed", "approval.pending"],
        "rt",
    )
    assert made.created_by == "ria"
    assert response.content.decode().count(secret) == 1
    assert "won't see it again" in page.one("data-secret-once").squashed
    assert "no-store" in response["Cache-Control"]
    event = AuditEvent.objects.filter(team=team).latest("seq")
    assert (event.action, event.actor, event.object_id) == ("webhook.created", "ria", str(made.pk))

    for later in (ria_client.get(detail(made)), ria_client.get(LIST)):
        assert later.status_code == 200
        assert secret not in later.content.decode()
        assert not dom(later).all("data-secret")
    assert secret not in str(ria_client.cookies)
    assert all(secret not in json.dumps(s.get_decoded()) for s in Session.objects.all())


def test_a_reloaded_answer_makes_no_second_webhook(ria_client: Client) -> None:
    once = dom(ria_client.get(LIST)).one("name", "once").get("value")
    first = add(ria_client, once=once)
    assert first.status_code == 200
    made = Endpoint.objects.get()
    again = add(ria_client, once=once)
    assert again.status_code == 302
    assert again["Location"] == f"{detail(made)}?team=acme"
    assert Endpoint.objects.count() == 1
    later = ria_client.get(again["Location"])
    assert "sent already" in alert_text(dom(later))
    assert made.secret not in later.content.decode()


def test_a_refused_url_is_said_on_the_form_which_keeps_the_input_and_nothing_is_written(
    ria_client: Client,
) -> None:
    unchanged = Unchanged(ignore=SESSIONS)
    url = "https://127.0.0.1:8443/internal"
    response = add(ria_client, url=url, events=["kv.written", "memory.erased"], description="x")
    assert response.status_code == 400
    page = dom(response, 400)
    assert "127.0.0.1" in field_error(page, "url")
    assert "loopback" in field_error(page, "url")
    assert page.one("id", "hook-url").get("value") == url
    assert page.one("id", "hook-url").get("aria-invalid") == "true"
    assert page.one("id", "hook-description").get("value") == "x"
    ticked = [str(e.get("value")) for e in page.elements if "checked" in e.attrs]
    assert sorted(ticked) == ["kv.written", "memory.erased"]
    assert not page.all("data-secret")
    unchanged.check()


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("http://93.184.215.14/hook", "must start with https://"),
        ("https://169.254.169.254/latest/meta-data/", "link-local"),
        ("https://user:pw@93.184.215.14/", "user name or password"),
        ("https://93.184.215.14:0/hook", "port must be a number from 1 to 65535"),
        ("https://93.184.215.14:65536/hook", "port must be a number from 1 to 65535"),
        ("", "Give the URL"),
    ],
)
def test_each_refusal_says_why(ria_client: Client, url: str, said: str) -> None:
    page = dom(add(ria_client, url=url), 400)
    assert said in field_error(page, "url")
    assert not Endpoint.objects.exists()


def test_choosing_no_event_is_a_clear_error(ria_client: Client) -> None:
    unchanged = Unchanged(ignore=SESSIONS)
    page = dom(add(ria_client, events=[]), 400)
    assert field_error(page, "events") == "Choose at least one event type, or All events."
    assert page.one("id", "hook-url").get("value") == PUBLIC
    unchanged.check()


def test_a_refused_url_and_no_event_are_both_said_at_once(ria_client: Client) -> None:
    page = dom(add(ria_client, url="https://[::1]/hook", events=[]), 400)
    assert "loopback" in field_error(page, "url")
    assert "Choose at least one event type" in field_error(page, "events")
    assert "Nothing was added" in page.one("data-form-errors").squashed
    assert not Endpoint.objects.exists()


def test_all_events_beside_others_is_all_events(ria_client: Client) -> None:
    add(ria_client, events=["kv.written", "*"])
    assert Endpoint.objects.get().events == ["*"]


def test_a_description_too_long_is_refused(ria_client: Client) -> None:
    page = dom(add(ria_client, description="d" * 501), 400)
    assert "at most 500" in field_error(page, "description")
    assert not Endpoint.objects.exists()


def test_the_twenty_first_webhook_is_refused_above_the_form(ria_client: Client, team: Team) -> None:
    for n in range(20):
        create_endpoint(team, SYSTEM, f"{PUBLIC}/{n}", ["kv.written"])
    page = dom(add(ria_client), 400)
    assert "at most 20 webhooks" in page.one("data-form-errors").squashed
    assert Endpoint.objects.count() == 20


def test_a_form_needs_a_token_of_the_page_csrf(ria: User, team: Team) -> None:
    strict = logged_in(ria, enforce_csrf_checks=True)
    assert add(strict).status_code == 403
    assert not Endpoint.objects.exists()


# --- one endpoint -----------------------------------------------------------------------


def test_the_page_says_what_the_endpoint_is(ria_client: Client, endpoint: Endpoint) -> None:
    page = dom(ria_client.get(detail(endpoint)))
    assert page.one("data-webhook-url").squashed == PUBLIC
    assert page.one("data-webhook-events").squashed == "All events"
    text = page.one("id", "content").squashed
    assert "billing relay" in text
    assert "by system" in text
    assert page.one("data-last-success").squashed == "never"
    assert page.one("data-webhook-waiting").squashed == "1"  # its own webhook.created
    assert not page.all("data-webhook-health")
    assert not page.all("data-secret")


@pytest.mark.parametrize(
    ("failing", "in_a_row", "shown"),
    [(False, 2, None), (False, 3, "warning"), (True, 9, "failing")],
)
def test_the_page_warns_before_failing_and_says_since_when_it_fails(
    ria_client: Client, endpoint: Endpoint, failing: bool, in_a_row: int, shown: str | None
) -> None:
    since = timezone.now() - timedelta(days=1)
    Endpoint.objects.filter(pk=endpoint.pk).update(
        failing_since=since if failing else None, failures_in_a_row=in_a_row
    )
    page = dom(ria_client.get(detail(endpoint)))
    banners = [e.get("data-webhook-health") for e in page.all("data-webhook-health", tag="p")]
    assert banners == ([shown] if shown else [])
    if shown == "failing":
        assert f"Failing since {since:%Y-%m-%d %H:%M} UTC" in alert_text(page)
    if shown == "warning":
        assert "The last 3 tries failed" in alert_text(page)


@pytest.fixture
def loopback(settings: Any) -> None:
    settings.WEBHOOKS_ALLOW_HTTP = True
    settings.WEBHOOKS_ALLOW_PRIVATE = True


def test_the_tries_table_shows_each_try_with_resend(
    loopback: None, ria_client: Client, team: Team
) -> None:
    with receiving([500, 204]) as receiver:
        made = hook(team, receiver.url, "kv.written").endpoint
        store.write(team, "must.tone", "calm")
        work()
    page = dom(ria_client.get(detail(made)))
    (row,) = page.all("data-attempt-id")
    dispatch = Dispatch.objects.get()
    assert row.get("data-dispatch-id") == str(dispatch.pk)
    cells = [e.squashed for e in row.children if e.tag == "td"]
    assert cells[1:3] == [f"kv.written {dispatch.message_id}", "500"]
    assert cells[3].endswith(" ms")
    assert cells[4] == "HTTP 500"
    assert buttons(row) == ["Resend"]
    assert page.one("data-webhook-waiting").squashed == "1"  # to be tried again


def test_resend_queues_the_same_message_again(
    loopback: None, ria_client: Client, team: Team
) -> None:
    with receiving([204]) as receiver:
        made = hook(team, receiver.url, "kv.written").endpoint
        store.write(team, "must.tone", "calm")
        work()
        original = Dispatch.objects.get()
        assert original.state == Dispatch.State.SUCCEEDED

        response = ria_client.post(
            f"{detail(made)}resend/", {"team": "acme", "dispatch": original.pk}
        )
        assert response.status_code == 302
        again = Dispatch.objects.exclude(pk=original.pk).get()
        assert (again.message_id, again.event_type, again.body) == (
            original.message_id,
            original.event_type,
            original.body,
        )
        assert again.state == Dispatch.State.PENDING
        page = dom(ria_client.get(response["Location"]))
        assert f"Message {original.message_id} (kv.written) is queued" in alert_text(page)
        work()
    first, second = receiver.received
    assert first.headers["webhook-id"] == second.headers["webhook-id"] == original.message_id


def test_resend_with_htmx_answers_the_row_and_the_waiting_count(
    ria_client: Client, endpoint: Endpoint
) -> None:
    original = Dispatch.objects.get()  # its own webhook.created, waiting
    response = ria_client.post(
        f"{detail(endpoint)}resend/",
        {"team": "acme", "dispatch": original.pk},
        headers={"HX-Request": "true"},
    )
    page = fragment(response)
    assert page.one("data-resent").squashed == "Queued again"
    counter = page.one("id", "webhook-waiting")
    assert (counter.get("hx-swap-oob"), counter.squashed) == ("true", "2")
    assert Dispatch.objects.filter(message_id=original.message_id).count() == 2


def test_resend_of_a_message_the_endpoint_never_had_sends_nothing(
    ria_client: Client, team: Team, endpoint: Endpoint
) -> None:
    other = create_endpoint(team, SYSTEM, f"{PUBLIC}/other", ["kv.written"]).endpoint
    theirs = Dispatch.objects.filter(endpoint=endpoint).earliest("pk")
    before = Dispatch.objects.count()
    response = ria_client.post(f"{detail(other)}resend/", {"team": "acme", "dispatch": theirs.pk})
    assert response.status_code == 302
    assert "No message" in alert_text(dom(ria_client.get(response["Location"])))
    assert Dispatch.objects.count() == before


def test_rotating_asks_first_then_shows_the_new_secret_once(
    ria_client: Client, team: Team, endpoint: Endpoint
) -> None:
    old = endpoint.secret
    page = dom(ria_client.get(detail(endpoint)))
    assert page.links("Rotate secret…") == [f"{detail(endpoint)}rotate/"]
    ask = dom(ria_client.get(f"{detail(endpoint)}rotate/"))
    form = ask.one("data-confirm", "rotate")
    assert buttons(form) == ["Rotate secret"]

    # A post without the confirmation only asks.
    asked = ria_client.post(f"{detail(endpoint)}rotate/", {"team": "acme"})
    assert dom(asked).all("data-confirm")
    assert Endpoint.objects.get().secret == old

    once = form_value(form, "once")
    response = ria_client.post(
        f"{detail(endpoint)}rotate/", {"team": "acme", "confirm": "on", "once": once}
    )
    secret = shown_secret(dom(response))
    rotated = Endpoint.objects.get()
    assert secret == rotated.secret != old
    assert rotated.previous_secret == old
    assert response.content.decode().count(secret) == 1
    assert "no-store" in response["Cache-Control"]
    assert "24 hours" in dom(response).one("data-secret-once").squashed
    assert AuditEvent.objects.filter(team=team).latest("seq").action == "webhook.rotated"
    assert secret not in ria_client.get(detail(endpoint)).content.decode()

    # Reloading the answer rotates nothing more.
    again = ria_client.post(
        f"{detail(endpoint)}rotate/", {"team": "acme", "confirm": "on", "once": once}
    )
    assert again.status_code == 302
    assert Endpoint.objects.get().secret == secret


def form_value(form: Any, name: str) -> str:
    (field,) = inside(form, "input", name=name)
    return str(field.get("value"))


def test_deleting_asks_first_then_deletes_with_its_audit_event(
    ria_client: Client, team: Team, endpoint: Endpoint
) -> None:
    ask = dom(ria_client.get(f"{detail(endpoint)}delete/"))
    assert "1 message waiting" in ask.one("data-confirm", "delete").squashed
    assert ria_client.post(f"{detail(endpoint)}delete/", {"team": "acme"}).status_code == 200
    assert Endpoint.objects.exists()

    response = ria_client.post(f"{detail(endpoint)}delete/", {"team": "acme", "confirm": "on"})
    assert response.status_code == 302
    assert response["Location"] == f"{LIST}?team=acme"
    assert not Endpoint.objects.exists()
    assert not Dispatch.objects.exists()
    assert AuditEvent.objects.filter(team=team).latest("seq").action == "webhook.deleted"
    assert "93.184.215.14 deleted" in alert_text(dom(ria_client.get(response["Location"])))
    assert ria_client.get(detail(endpoint)).status_code == 404


def test_a_link_to_an_endpoint_of_another_of_the_users_teams_switches_to_it(
    team: Team, other_team: Team
) -> None:
    duo = make_user("duo", team, other_team)
    Membership.objects.filter(user=duo).update(role=Role.REVIEWER)
    theirs = create_endpoint(other_team, SYSTEM, PUBLIC, ["*"]).endpoint
    client = logged_in(duo)
    page = dom(client.get(detail(theirs)))
    assert "Switched to team Globex" in alert_text(page)


def test_the_audit_log_links_a_webhook_to_its_page(ria_client: Client, endpoint: Endpoint) -> None:
    page = dom(ria_client.get("/audit/?action=webhook.created"))
    assert page.links(str(endpoint.pk)) == [detail(endpoint)]


# --- query counts -----------------------------------------------------------------------


def attempts(endpoint: Endpoint, count: int) -> None:
    """``count`` messages of one event each tried once, as the sender records them."""
    now = timezone.now()
    for n in range(count):
        dispatch = Dispatch.objects.create(
            team_id=endpoint.team_id,
            endpoint=endpoint,
            message_id=f"msg_test{n}",
            event_type="kv.written",
            body="{}",
            created_at=now,
            next_try_at=now,
            tries=1,
        )
        Attempt.objects.create(
            dispatch=dispatch, endpoint=endpoint, at=now, status_code=503, duration_ms=12
        )


def test_the_list_reads_the_same_queries_for_two_endpoints_or_twenty(
    ria_client: Client, team: Team, django_assert_max_num_queries: Any
) -> None:
    for n in range(2):
        attempts(create_endpoint(team, SYSTEM, f"{PUBLIC}/{n}", ["*"]).endpoint, 3)
    ria_client.get(LIST)  # settle the session
    with django_assert_max_num_queries(12) as captured:
        assert ria_client.get(LIST).status_code == 200
    few = len(captured)
    for n in range(2, 20):
        attempts(create_endpoint(team, SYSTEM, f"{PUBLIC}/{n}", ["*"]).endpoint, 3)
    with django_assert_max_num_queries(few, info="the list of 20 webhooks"):
        page = dom(ria_client.get(LIST))
    assert len(page.all("data-webhook-id")) == 20


def test_the_tries_table_reads_the_same_queries_for_two_tries_or_fifty(
    ria_client: Client, endpoint: Endpoint, django_assert_max_num_queries: Any
) -> None:
    attempts(endpoint, 2)
    ria_client.get(detail(endpoint))
    with django_assert_max_num_queries(14) as captured:
        assert ria_client.get(detail(endpoint)).status_code == 200
    few = len(captured)
    attempts(endpoint, 60)
    with django_assert_max_num_queries(few, info="the newest 50 of 62 tries"):
        page = dom(ria_client.get(detail(endpoint)))
    assert len(page.all("data-attempt-id")) == 50


# --- the URL's hint: the settings that decide which addresses are called -------------


def test_the_url_hint_names_the_settings_a_local_receiver_needs(ria_client: Client) -> None:
    hint = dom(ria_client.get(LIST)).one("data-url-help").squashed
    assert "An https:// address on the public internet" in hint
    assert "start the server with WEBHOOKS_ALLOW_HTTP=1 and WEBHOOKS_ALLOW_PRIVATE=1" in hint
    assert "make run sets both" in hint


def test_the_url_hint_says_when_local_receivers_are_allowed(
    loopback: None, ria_client: Client
) -> None:
    hint = dom(ria_client.get(LIST)).one("data-url-help").squashed
    assert "An http:// or https:// address on this machine" in hint
    assert "runs with WEBHOOKS_ALLOW_HTTP=1 and WEBHOOKS_ALLOW_PRIVATE=1" in hint
    assert "start the server with" not in hint


def test_the_url_hint_names_only_the_setting_still_off(settings: Any, ria_client: Client) -> None:
    settings.WEBHOOKS_ALLOW_HTTP = True
    hint = dom(ria_client.get(LIST)).one("data-url-help").squashed
    assert "runs with WEBHOOKS_ALLOW_HTTP=1 (as make run" in hint
    assert "start the server with WEBHOOKS_ALLOW_PRIVATE=1 (" in hint
