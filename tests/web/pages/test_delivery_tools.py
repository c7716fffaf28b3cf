"""What a delivery's page offers a developer (SPEC §11, §9): the prompt and its SHA-256
as downloads (text files authorised like the page) and copy buttons, the previous and
next delivery of the same agent, and "Compare with…" any delivery through the diff page.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from lens.actors import SYSTEM
from lens.models import Agent, Team
from memory.core.deliveries import DeliveryInput
from memory.deliveries.ledger import composition_data, deliver
from memory.models import Delivery
from tests.factories import create_agent, memory_config, remember
from tests.pages import Dom, dom
from web.pages.delivery_pages import COMPARE_SUGGESTIONS

pytestmark = pytest.mark.django_db


def delivered(agent: Agent, session: str | None = "s-1") -> Delivery:
    return deliver(agent, SYSTEM, DeliveryInput(session=session, model="gpt-x")).delivery


def prompt_of(delivery: Delivery) -> str:
    data = composition_data(delivery.composition)
    return "\n\n".join(
        "".join(f["text"] for f in section["fragments"]) for section in data["prompt"]["sections"]
    )


def downloads(delivery: Delivery) -> list[str]:
    return [f"/deliveries/{delivery.id}/prompt.txt", f"/deliveries/{delivery.id}/prompt.txt.sha256"]


# --- downloads ----------------------------------------------------------------------


def test_the_prompt_downloads_byte_for_byte_with_its_sha256(
    member_client: Client, wren: Agent
) -> None:
    # Odd Unicode: astral and joined emoji, a combining accent (never normalised).
    remember(wren, "profile", "Ada 👩🏽‍💻 e\u0301 and ﬁ", label="name")
    delivery = delivered(wren)
    response = member_client.get(f"/deliveries/{delivery.id}/prompt.txt")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    name = f"wren-{delivery.id}.txt"
    assert response["Content-Disposition"] == f'attachment; filename="{name}"'
    assert response.content == prompt_of(delivery).encode("utf-8")
    assert "Ada 👩🏽‍💻 e\u0301 and ﬁ" in response.content.decode("utf-8")
    sha = hashlib.sha256(response.content).hexdigest()
    assert sha == delivery.composition.prompt_sha256

    checksum = member_client.get(f"/deliveries/{delivery.id}/prompt.txt.sha256")
    assert checksum.status_code == 200
    assert checksum["Content-Type"] == "text/plain; charset=utf-8"
    assert checksum["Content-Disposition"] == f'attachment; filename="{name}.sha256"'
    # sha256sum's format: saved beside the prompt, `sha256sum -c` checks it.
    assert checksum.content.decode() == f"{sha}  {name}\n"


def test_downloads_are_404_to_strangers_and_ask_anonymous_people_to_log_in(
    client: Client, stranger_client: Client, wren: Agent
) -> None:
    for url in downloads(delivered(wren)):
        assert stranger_client.get(url).status_code == 404, url
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"] == f"/accounts/login/?next={url}"


@pytest.mark.parametrize("bad", ["nope", "0" * 33, "0honsj18gv9cnllff\u00e9"])
def test_downloads_of_unknown_or_malformed_ids_are_404(member_client: Client, bad: str) -> None:
    for url in (f"/deliveries/{bad}/prompt.txt", f"/deliveries/{bad}/prompt.txt.sha256"):
        assert member_client.get(url).status_code == 404, url


def test_downloads_answer_get_only(member_client: Client, wren: Agent) -> None:
    for url in downloads(delivered(wren)):
        assert member_client.post(url).status_code == 405, url


def test_the_page_links_both_downloads_and_offers_copy_buttons_once_scripts_run(
    member_client: Client, wren: Agent
) -> None:
    delivery = delivered(wren)
    page = dom(member_client.get(f"/deliveries/{delivery.id}/"))
    links = {e.get("data-download"): e.get("href") for e in page.all("data-download")}
    assert links == dict(zip(("prompt", "sha256"), downloads(delivery), strict=True))
    sha = page.one("data-prompt-sha256")
    assert sha.text == delivery.composition.prompt_sha256
    # The buttons need lens.js (a static file: the CSP allows no inline script), which
    # shows them; without it they stay hidden and the downloads do the job.
    copy_sha = page.one("data-copy-from")
    assert copy_sha.get("data-copy-from") == sha.get("id")
    copy_prompt = page.one("data-copy-prompt")
    for button in (copy_sha, copy_prompt):
        assert button.tag == "button"
        assert "hidden" in button.attrs


# --- previous and next ----------------------------------------------------------------


def steps(page: Dom) -> dict[str, str | None]:
    found: dict[str, str | None] = {
        e.get("data-step") or "": e.get("href") for e in page.all("data-step")
    }
    for e in page.all("data-step-none"):
        found[e.get("data-step-none") or ""] = None
    return found


def test_previous_and_next_walk_the_same_agents_deliveries(
    member_client: Client, team: Team, wren: Agent
) -> None:
    other = create_agent(team, "otto", memory_config())
    first = delivered(wren)
    delivered(other)  # in between in time, but another agent's
    middle = delivered(wren)
    delivered(other)
    last = delivered(wren)

    def at(d: Delivery) -> dict[str, str | None]:
        return steps(dom(member_client.get(f"/deliveries/{d.id}/")))

    assert at(first) == {"previous": None, "next": f"/deliveries/{middle.id}/"}
    assert at(middle) == {
        "previous": f"/deliveries/{first.id}/",
        "next": f"/deliveries/{last.id}/",
    }
    assert at(last) == {"previous": f"/deliveries/{middle.id}/", "next": None}
    page = dom(member_client.get(f"/deliveries/{middle.id}/"))
    assert {e.get("rel") for e in page.all("data-step")} == {"prev", "next"}


def test_deliveries_a_microsecond_apart_are_neighbours(member_client: Client, wren: Agent) -> None:
    one = delivered(wren)
    two = Delivery.objects.create(
        agent=wren,
        composition=one.composition,
        delivered_at=one.delivered_at + timedelta(microseconds=1),
    )
    assert steps(dom(member_client.get(f"/deliveries/{one.id}/")))["next"] == (
        f"/deliveries/{two.id}/"
    )
    assert steps(dom(member_client.get(f"/deliveries/{two.id}/")))["previous"] == (
        f"/deliveries/{one.id}/"
    )


# --- compare with… --------------------------------------------------------------------


def test_the_compare_form_offers_recent_deliveries_to_pick_from(
    member_client: Client, wren: Agent
) -> None:
    first = delivered(wren, session="first-session")
    previous = delivered(wren)
    shown = delivered(wren)
    page = dom(member_client.get(f"/deliveries/{shown.id}/"))
    form = page.one("data-compare-form")
    assert (form.get("method"), form.get("action")) == ("get", f"/deliveries/{shown.id}/diff/")
    picker = page.one("id", "compare-against")
    assert (picker.tag, picker.get("name"), picker.ancestor("form")) == ("select", "against", form)
    options = [e for e in picker.descendants() if e.tag == "option"]
    # Every delivery but the one shown, newest first, the previous one chosen.
    assert [o.get("value") for o in options] == [previous.id, first.id]
    assert "selected" in options[0].attrs
    assert "(previous)" in options[0].squashed
    assert "first-session" in options[1].squashed

    compared = member_client.get(form.get("action") or "", {"against": first.id})
    assert compared.status_code == 200


def test_compare_by_id_is_a_form_of_its_own(member_client: Client, wren: Agent) -> None:
    shown = delivered(wren)
    page = dom(member_client.get(f"/deliveries/{shown.id}/"))
    # The first delivery has nothing to pick: the form by id is open.
    assert page.all("data-compare-form") == []
    form = page.one("data-compare-id-form")
    assert form.get("action") == f"/deliveries/{shown.id}/diff/"
    field = page.one("id", "compare-id")
    assert (field.get("name"), field.ancestor("form")) == ("against", form)
    assert "required" in field.attrs
    assert field.get("pattern") == "[0-9a-z]{1,32}"
    details = field.ancestor("details")
    assert details is not None
    assert "open" in details.attrs


def test_compare_offers_at_most_the_newest_twenty(member_client: Client, wren: Agent) -> None:
    shown = delivered(wren)
    _bulk(wren, shown, COMPARE_SUGGESTIONS + 5)
    page = dom(member_client.get(f"/deliveries/{shown.id}/"))
    options = [e for e in page.one("id", "compare-against").descendants() if e.tag == "option"]
    assert len(options) == COMPARE_SUGGESTIONS
    assert shown.id not in {o.get("value") for o in options}


def test_comparing_with_an_unknown_or_another_teams_delivery_is_a_form_error(
    member_client: Client, client: Client, stranger_client: Client, other_team: Team, wren: Agent
) -> None:
    """The delivery's own page, saying why, never a bare 404 (or Django's debug page)."""
    mine = delivered(wren)
    theirs = delivered(create_agent(other_team, "wren", memory_config()))
    diff = f"/deliveries/{mine.id}/diff/"
    for against in (theirs.id, "zzzzzzzz", "0" * 33, "<script>"):
        response = member_client.get(diff, {"against": against})
        assert response.status_code == 404, against
        page = dom(response, 404)
        assert page.one("data-prompt-sha256").text == mine.composition.prompt_sha256
        error = page.one("data-compare-error")
        assert error.squashed.startswith(f"No delivery {against[:40]!r} of {wren.name}"), against
        assert page.one("id", "compare-id").get("aria-invalid") == "true"
        details = page.one("id", "compare-id").ancestor("details")
        assert details is not None
        assert "open" in details.attrs
    # Someone who may not see the delivery learns nothing, whatever they compare with.
    assert stranger_client.get(diff, {"against": "zzzzzzzz"}).status_code == 404
    assert b"data-compare-error" not in stranger_client.get(diff, {"against": "zz"}).content
    response = client.get(diff, {"against": mine.id})
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


# --- cost -----------------------------------------------------------------------------


def _bulk(agent: Agent, template: Delivery, n: int) -> None:
    Delivery.objects.bulk_create(
        Delivery(
            agent=agent,
            composition_id=template.composition_id,
            delivered_at=template.delivered_at - timedelta(seconds=i + 1),
        )
        for i in range(n)
    )


def _queries(client: Client, url: str) -> int:
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(url).status_code == 200
    return len(ctx.captured_queries)


def test_the_page_reads_a_fixed_number_of_queries_however_many_deliveries(
    member_client: Client, wren: Agent, django_assert_max_num_queries: Callable[..., Any]
) -> None:
    shown = delivered(wren)
    _bulk(wren, shown, 2)
    url = f"/deliveries/{shown.id}/"
    few = _queries(member_client, url)
    _bulk(wren, Delivery.objects.filter(agent=wren).order_by("delivered_at").first() or shown, 200)
    with django_assert_max_num_queries(few):
        assert member_client.get(url).status_code == 200
