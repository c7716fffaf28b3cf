"""The admin's agent form declares the model the agent mostly runs on: with the API's
rules, blank for none, each change a revision, and an unchanged form none."""

from __future__ import annotations

import pytest
from django.test import Client

from lens.agents import config_of
from lens.models import Agent, Revision
from lens.revisions import stored_config
from tests.pages import FormData, admin_agent_url, assert_refused, put

pytestmark = pytest.mark.django_db


def newest(agent: Agent) -> Revision:
    found = Revision.objects.filter(agent=agent).order_by("-number").first()
    assert found is not None
    return found


def test_the_form_offers_the_model_blank_for_an_agent_without_one(
    agent: Agent, agent_form: FormData
) -> None:
    assert agent_form["model"] == [""]


def test_declaring_a_model_is_a_revision_and_blanking_it_another(
    admin_client: Client, agent: Agent, agent_form: FormData
) -> None:
    put(agent_form, "model", " gpt-4o-2024-08-06 ")  # the admin trims a one-line field
    assert admin_client.post(admin_agent_url(agent), agent_form).status_code == 302
    row = newest(agent)
    assert row.summary == [{"change": "field_changed", "field": "model"}]
    assert stored_config(row).model == "gpt-4o-2024-08-06"
    assert Agent.objects.get(pk=agent.pk).model == "gpt-4o-2024-08-06"

    # Saved again unchanged: nothing.
    assert admin_client.post(admin_agent_url(agent), agent_form).status_code == 302
    assert newest(agent).number == row.number

    put(agent_form, "model", "")
    assert admin_client.post(admin_agent_url(agent), agent_form).status_code == 302
    fresh = Agent.objects.get(pk=agent.pk)
    assert fresh.model is None  # NULL, as the API's null: not an empty name
    assert config_of(fresh).model is None
    assert newest(agent).number == row.number + 1
    assert '"model"' not in newest(agent).config.text


@pytest.mark.parametrize("model", ["gpt 4o", "-gpt-4o", "gpt\u202e4o", "x" * 129])
def test_a_bad_model_is_refused_with_the_apis_words(
    admin_client: Client, agent: Agent, agent_form: FormData, model: str
) -> None:
    put(agent_form, "model", model)
    response = admin_client.post(admin_agent_url(agent), agent_form)
    assert_refused(response, "is not a model name" if len(model) <= 128 else "at most 128")
    assert newest(agent).number == 1
    assert Agent.objects.get(pk=agent.pk).model is None
