"""The revisions pages say each revision in the words of its own time (SPEC §14): a
section is named as that revision called it, never as the agent calls it now, and a
retitle says which way it went, so a rename and its restore read as opposites.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from lens.actors import SYSTEM, Actor
from lens.core.config import AgentConfig
from lens.models import Agent, Revision, Team, Via
from memory.configuring import restore_revision, store_agent
from memory.core.deliveries import DeliveryInput
from memory.deliveries.ledger import deliver
from tests.factories import memory_config
from tests.pages import Dom, dom

pytestmark = pytest.mark.django_db

LIST = "/agents/wren/revisions/"


def config(rules_title: str, **extra: Any) -> AgentConfig:
    """Wren with a locked section ``rules`` titled ``rules_title``."""
    data = memory_config(**extra)
    data["background"]["sections"].append(
        {
            "id": "rules",
            "title": rules_title,
            "promotion": "locked",
            "entries": [{"key": "tone", "value": "Be kind."}],
        }
    )
    return AgentConfig.model_validate(data)


def store(team: Team, who: User, agent_config: AgentConfig) -> Agent:
    agent, _ = store_agent(team, "wren", agent_config, actor=Actor.for_user(who), via=Via.ADMIN)
    return agent


def row_words(page: Dom) -> dict[int, str]:
    """What each row of the list says, by revision number."""
    found = {}
    for row in page.all("data-revision-number", tag="tr"):
        [cell] = [e for e in row.descendants() if "data-words" in e.attrs]
        found[int(str(row.get("data-revision-number")))] = cell.squashed
    return found


def test_an_old_revision_names_sections_as_it_called_them(
    member_client: Client, team: Team, member: User
) -> None:
    store(team, member, config("Rules"))
    store(team, member, config("House Rules"))
    words = row_words(dom(member_client.get(LIST)))
    # Revision 1 added the section called Rules: the rename came later.
    assert "Rules (rules)" in words[1]
    assert "House Rules" not in words[1]
    assert words[2] == "Section “Rules” (rules) retitled “House Rules”"
    assert "House Rules" not in member_client.get(f"{LIST}1/").content.decode()


def test_a_rename_and_its_restore_read_as_opposites(
    member_client: Client, team: Team, member: User
) -> None:
    agent = store(team, member, config("Rules"))
    store(team, member, config("House Rules"))
    restored = restore_revision(agent, 1, Actor.for_user(member))
    assert restored.recorded is not None
    words = row_words(dom(member_client.get(LIST)))
    assert words[2] == "Section “Rules” (rules) retitled “House Rules”"
    assert words[3] == "Section “House Rules” (rules) retitled “Rules”"
    # A revision's own page says it the same way; a diff says the way it is taken (from
    # revision 3's declarations to revision 2's, the rename again).
    detail = member_client.get(f"{LIST}3/").content.decode()
    assert "Section “House Rules” (rules) retitled “Rules”" in detail
    backwards = dom(member_client.get(f"{LIST}2/?against=3")).one("data-diff-words").squashed
    assert backwards == "Section “Rules” (rules) retitled “House Rules”"


def test_a_retitle_stored_without_its_titles_is_said_from_the_configs(
    member_client: Client, team: Team, member: User
) -> None:
    agent = store(team, member, config("Rules"))
    store(team, member, config("House Rules"))
    restore_revision(agent, 1, Actor.for_user(member))
    # As revisions recorded before the titles were kept in the summary hold it.
    for revision in Revision.objects.filter(agent=agent, number__in=(2, 3)):
        revision.summary = [{"change": "section_retitled", "section": "rules"}]
        revision.save(update_fields=["summary"])
    words = row_words(dom(member_client.get(LIST)))
    assert words[2] == "Section “Rules” (rules) retitled “House Rules”"
    assert words[3] == "Section “House Rules” (rules) retitled “Rules”"
    assert "Section “Rules” (rules) retitled “House Rules”" in (
        member_client.get(f"{LIST}2/").content.decode()
    )


def test_a_removed_section_is_named_by_its_last_title(
    member_client: Client, team: Team, member: User
) -> None:
    store(team, member, config("Rules"))
    store(team, member, AgentConfig.model_validate(memory_config()))  # rules removed
    store(team, member, config("Policies"))  # the id comes back, called otherwise
    words = row_words(dom(member_client.get(LIST)))
    assert words[2] == "Section Rules (rules) removed"
    assert words[3] == "Section Policies (rules) added"
    assert "Policies" not in words[1]


def test_the_causes_of_a_delivery_diff_use_the_words_of_their_time(
    member_client: Client, team: Team, member: User
) -> None:
    agent = store(team, member, config("Rules"))
    first = deliver(agent, SYSTEM, DeliveryInput(session="s-1")).delivery
    agent = store(team, member, config("House Rules"))
    second = deliver(agent, SYSTEM, DeliveryInput(session="s-2")).delivery
    store(team, member, config("Guidelines"))
    html = member_client.get(f"/deliveries/{second.id}/diff/?against={first.id}").content.decode()
    assert "Section “Rules” (rules) retitled “House Rules”" in html
    assert "Guidelines" not in html
