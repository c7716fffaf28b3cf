"""The canonical JSON of a composition (SPEC §11): one text for one composition, whatever
order its keys came in, and the text a stored composition is addressed by.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lens.actors import Actor
from lens.agents import get_agent
from memory.core.composition import Composition
from memory.core.deliveries import sha256_hex
from memory.deliveries.ledger import composition_json, deliver
from tests.api_calls import ApiClient, api_composition
from tests.factories import Story, composed

pytestmark = pytest.mark.django_db

# Fields that are maps rather than objects: their order is the composer's (sorted), and
# the canonical text keeps it, so shuffling stops at their boundary.
MAPS = frozenset({"drops_by_reason", "chars_used"})


def shuffled(data: Any, rng: random.Random) -> Any:
    """The same JSON value with the keys of every object in another order."""
    if isinstance(data, dict):
        items = list(data.items())
        rng.shuffle(items)
        return {key: value if key in MAPS else shuffled(value, rng) for key, value in items}
    if isinstance(data, list):
        return [shuffled(value, rng) for value in data]
    return data


def test_the_canonical_text_is_compact_json_with_characters_as_they_are(story: Story) -> None:
    composition = composed(story.agent)
    text = composition.canonical_json()
    data = json.loads(text)
    assert data == composition.model_dump(mode="json")
    assert text == json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    assert "Gdańsk" in text  # not \u-escaped
    assert len(data["report"]["stats"]["drops_by_reason"]) > 1


@settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(seed=st.integers(min_value=0, max_value=2**32))
def test_the_canonical_text_does_not_depend_on_key_order(story: Story, seed: int) -> None:
    composition = composed(story.agent)
    text = composition.canonical_json()
    reordered = shuffled(json.loads(text), random.Random(seed))
    assert Composition.model_validate(reordered).canonical_json() == text


def test_the_canonical_text_reads_back_to_itself(story: Story) -> None:
    text = composed(story.agent).canonical_json()
    assert Composition.model_validate_json(text).canonical_json() == text


def test_composing_twice_gives_one_text(story: Story) -> None:
    assert composed(story.agent).canonical_json() == composed(story.agent).canonical_json()


def test_a_delivery_stores_and_answers_the_canonical_text(api: ApiClient, story: Story) -> None:
    agent = get_agent(story.agent.team, story.agent.slug)
    delivered = deliver(agent, Actor(label="test"))
    text = composed(story.agent).canonical_json()

    assert delivered.composition_json == text
    stored = delivered.delivery.composition
    assert composition_json(stored) == text
    assert stored.digest == sha256_hex(text)
    assert json.loads(text) == api_composition(api)
