"""Erasing from the memory's page (SPEC §15): a reviewer of the team, a reason and the
memory's id typed again; anyone else, or anything less, changes nothing."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection, transaction
from django.test import Client
from django_tasks import TaskResultStatus
from django_tasks_db.models import DBTaskResult

from lens.actors import SYSTEM
from lens.models import Agent, Team
from memory.deliveries.ledger import deliver
from memory.erasure import REASON_MAX
from memory.models import Delivery, MemoryRecord, PromotionStatus
from tests.factories import Unchanged, grant, logged_in, make_user, promotion_of, remember
from tests.pages import Dom, alert_text, buttons, dom, inside
from tests.web.commands.test_erase_memory import last_vacuums, vacuumed_since
from tests.webhooks.hooks import engine_worker

pytestmark = pytest.mark.django_db

SECRET = "Zebulon keeps his spare key under the blue heron"
LABEL = "Sparekey"


def saved(wren: Agent) -> str:
    record_id = remember(wren, "profile", SECRET, label=LABEL, tags=["heronhideout"])
    deliver(wren, SYSTEM)
    deliver(wren, SYSTEM)
    return record_id


def erase_form(page: Dom) -> Any:
    (form,) = [e for e in page.elements if e.tag == "form" and "data-erase-form" in e.attrs]
    return form


def post(client: Client, record_id: str, **fields: str) -> Any:
    data = {"team": "acme", "reason": "Request #42", "confirm": record_id, **fields}
    return client.post(f"/memories/{record_id}/erase/", data)


def shows_nothing_of_it(html: str) -> bool:
    return not any(w in html for w in ("Zebulon", "heron", LABEL, "sparekey", "heronhideout"))


# --- the way there ----------------------------------------------------------------------


def test_the_memory_page_offers_erase_to_a_reviewer_and_asks_for_the_id(
    reviewer_client: Client, wren: Agent
) -> None:
    record_id = saved(wren)
    page = dom(reviewer_client.get(f"/memories/{record_id}/"))
    (form,) = [e for e in page.elements if e.tag == "form" and "data-erase" in e.attrs]
    assert (form.get("method"), form.get("action")) == ("get", f"/memories/{record_id}/erase/")
    assert buttons(form) == ["Erase"]

    confirm = dom(reviewer_client.get(f"/memories/{record_id}/erase/", {"team": "acme"}))
    assert confirm.one("data-erase-deliveries").get("data-erase-deliveries") == "2"
    assert "1 stored prompt, delivered 2 times" in confirm.one("data-erase-deliveries").squashed
    form = erase_form(confirm)
    assert buttons(form) == ["Erase permanently"]
    names = {str(e.get("name")) for e in inside(form, "input")}
    assert {"team", "reason", "confirm", "csrfmiddlewaretoken"} <= names
    assert MemoryRecord.objects.get(pk=record_id).content == SECRET  # asking changed nothing


def test_a_member_who_is_not_a_reviewer_sees_no_erase_and_is_refused(
    viewer_client: Client, wren: Agent
) -> None:
    record_id = saved(wren)
    page = dom(viewer_client.get(f"/memories/{record_id}/"))
    assert "Erase" not in buttons(page)
    assert viewer_client.get(f"/memories/{record_id}/erase/").status_code == 403
    unchanged = Unchanged(ignore=("sessions.Session",))
    assert post(viewer_client, record_id).status_code == 403
    unchanged.check()


def test_a_stranger_gets_404_and_anonymous_gets_the_login_page(
    wren: Agent, other_team: Team
) -> None:
    record_id = saved(wren)
    stranger = logged_in(grant(make_user("sam", other_team)))
    unchanged = Unchanged(ignore=("sessions.Session",))
    assert stranger.get(f"/memories/{record_id}/erase/").status_code == 404
    assert post(stranger, record_id, team="globex").status_code == 404
    anonymous = Client()
    for response in (anonymous.get(f"/memories/{record_id}/erase/"), post(anonymous, record_id)):
        assert response.status_code == 302
        assert response["Location"].startswith("/accounts/login/")
    unchanged.check()


def test_a_post_without_the_csrf_token_is_refused(reviewer: User, wren: Agent) -> None:
    record_id = saved(wren)
    client = logged_in(reviewer, enforce_csrf_checks=True)
    assert post(client, record_id).status_code == 403
    assert MemoryRecord.objects.get(pk=record_id).erased_at is None


# --- refusals ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("typed", "said"),
    [
        ("", "nothing was typed"),
        ("0000000000000000aa", "what was typed is not its id"),
        ("ERASE", "what was typed is not its id"),
    ],
)
def test_a_wrong_or_missing_id_is_refused_and_nothing_is_erased(
    reviewer_client: Client, wren: Agent, typed: str, said: str
) -> None:
    record_id = saved(wren)
    unchanged = Unchanged(ignore=("sessions.Session",))
    page = dom(post(reviewer_client, record_id, confirm=typed), 400)
    errors = page.one("data-erase-errors").squashed
    assert f"Type the memory's id, {record_id}, to confirm: {said}." in errors
    assert "Nothing was erased." in errors
    assert page.one("id", "erase-reason").get("value") == "Request #42"  # kept for a retry
    unchanged.check()


@pytest.mark.parametrize(
    ("reason", "said"),
    [
        ("", "A reason is required"),
        ("   ", "A reason is required"),
        ("x" * (REASON_MAX + 1), f"at most {REASON_MAX} characters"),
        ("two\u2028lines", "one line of text"),
    ],
)
def test_a_missing_or_bad_reason_is_refused_and_nothing_is_erased(
    reviewer_client: Client, wren: Agent, reason: str, said: str
) -> None:
    record_id = saved(wren)
    unchanged = Unchanged(ignore=("sessions.Session",))
    page = dom(post(reviewer_client, record_id, reason=reason), 400)
    assert said in page.one("data-erase-errors").squashed
    unchanged.check()


def test_a_form_of_a_team_the_user_left_is_refused(reviewer_client: Client, wren: Agent) -> None:
    record_id = saved(wren)
    unchanged = Unchanged(ignore=("sessions.Session",))
    response = post(reviewer_client, record_id, team="globex")
    assert response.status_code == 400
    unchanged.check()


# --- erasing -----------------------------------------------------------------------------


def test_erasing_tells_the_reviewer_and_the_page_shows_what_stays(
    reviewer_client: Client, wren: Agent
) -> None:
    record_id = saved(wren)
    response = post(reviewer_client, record_id, confirm=f"  {record_id} ", reason="Request #42")
    assert response.status_code == 302
    assert response["Location"] == f"/memories/{record_id}/?team=acme"

    page_response = reviewer_client.get(response["Location"])
    html = page_response.content.decode()
    page = dom(page_response)
    assert (
        f"Erased by mira: memory {record_id}. Its content, label and tags are gone; "
        "1 stored prompt (2 deliveries) reads [erased] where it was."
    ) in alert_text(page)
    assert page.one("data-erased-by").squashed == "mira"
    assert page.one("data-erase-reason").squashed == "Request #42"
    assert page.one("data-memory-status").get("data-memory-status") == "erased"
    assert "Erased by mira on " in page.one("data-memory-why").squashed
    assert "Erase" not in buttons(page)
    assert shows_nothing_of_it(html)
    assert promotion_of(record_id).status == PromotionStatus.ERASED
    record = MemoryRecord.objects.get(pk=record_id)
    assert (record.erased_by, record.erase_reason) == ("mira", "Request #42")
    assert page.one("data-content-sha256").squashed == record.content_sha256


def test_erasing_again_says_it_was_already_erased_and_changes_nothing(
    reviewer_client: Client, wren: Agent, team: Team
) -> None:
    record_id = saved(wren)
    post(reviewer_client, record_id)
    rhea = logged_in(grant(make_user("rhea", team)))
    unchanged = Unchanged(ignore=("sessions.Session",))
    response = post(rhea, record_id, reason="once more")
    assert response.status_code == 302
    assert "was already erased" in alert_text(dom(rhea.get(response["Location"])))
    page = dom(rhea.get(f"/memories/{record_id}/erase/"))
    assert page.all("data-erase-form") == []
    assert "already erased by mira" in page.one("data-erase-done").squashed
    unchanged.check()


def test_a_reviewer_of_the_team_without_the_global_permission_may_erase(
    wren: Agent, team: Team
) -> None:
    from lens.models import Membership, Role

    user = make_user("ines", team)
    Membership.objects.filter(user=user).update(role=Role.REVIEWER)
    record_id = saved(wren)
    assert post(logged_in(user), record_id).status_code == 302
    assert MemoryRecord.objects.get(pk=record_id).erased_by == "ines"


def test_the_lens_lists_it_among_the_drops_as_erased_in_words(
    reviewer_client: Client, wren: Agent
) -> None:
    record_id = saved(wren)
    post(reviewer_client, record_id, reason="Request #42")
    page = dom(reviewer_client.get("/agents/wren/"))
    drop = page.one("data-memory-id", record_id, "li")
    assert drop.get("data-drop-reason") == "erased"
    assert "[erased]" in drop.squashed
    assert "Erased by mira on " in drop.squashed
    assert "“Request #42”. Its content, label and tags are gone for good." in drop.squashed
    assert shows_nothing_of_it(reviewer_client.get("/agents/wren/").content.decode())
    timeline = dom(reviewer_client.get("/agents/wren/deliveries/"))
    assert len(timeline.all("data-redacted")) == 2
    delivery = Delivery.objects.order_by("delivered_at").first()
    assert delivery is not None
    detail = dom(reviewer_client.get(f"/deliveries/{delivery.pk}/"))
    assert "This prompt was redacted on " in detail.one("data-redacted").squashed
    fragment = detail.one("data-memory-ids", record_id)
    assert fragment.get("data-source") == "memory"
    assert fragment.squashed == "[erased]"
    fate = detail.one("data-fate", "erased")
    assert "erased by mira" in fate.squashed


def test_a_memory_no_prompt_held_says_so(reviewer_client: Client, wren: Agent) -> None:
    record_id = remember(wren, "fact", SECRET)
    response = post(reviewer_client, record_id)
    told = alert_text(dom(reviewer_client.get(response["Location"])))
    assert f"memory {record_id}. Its content, label and tags are gone; no delivered" in told


# --- PostgreSQL: the VACUUM runs on the worker, not in the request ---------------------


def vacuum_tasks() -> list[DBTaskResult[[], bool]]:
    return list(DBTaskResult.objects.filter(task_path="memory.erasure.vacuum"))


def run_task(found: DBTaskResult[[], bool]) -> DBTaskResult[[], bool]:
    """Run one queued task as ``manage.py worker`` does: claimed, then run outside a
    transaction by the engine's own ``run_task``."""
    worker = engine_worker()
    with transaction.atomic():
        claimed = DBTaskResult.objects.select_for_update().get(pk=found.pk)
        claimed.claim(worker.worker_id)
    worker.run_task(claimed)
    return DBTaskResult.objects.get(pk=found.pk)


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif("connection.vendor != 'postgresql'", reason="PostgreSQL's VACUUM")
def test_on_postgresql_erasing_queues_the_vacuum_and_the_worker_runs_it(
    reviewer_client: Client, wren: Agent
) -> None:
    record_id = saved(wren)
    assert vacuum_tasks() == []
    assert post(reviewer_client, record_id).status_code == 302
    (queued,) = vacuum_tasks()
    assert queued.status == TaskResultStatus.READY
    assert MemoryRecord.objects.get(pk=record_id).erased_at is not None  # committed with it
    before = last_vacuums()

    ran = run_task(queued)

    assert (ran.status, ran.return_value) == (TaskResultStatus.SUCCESSFUL, True)
    assert vacuumed_since(before)


def test_on_sqlite_erasing_queues_nothing(reviewer_client: Client, wren: Agent) -> None:
    if connection.vendor != "sqlite":
        pytest.skip("SQLite checkpoints its log in the request; it has no VACUUM to queue")
    record_id = saved(wren)
    assert post(reviewer_client, record_id).status_code == 302
    assert MemoryRecord.objects.get(pk=record_id).erased_at is not None
    assert vacuum_tasks() == []
