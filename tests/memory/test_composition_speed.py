"""Reading an agent does no repeated work (SPEC §8, the composition endpoint): authored
values are decoded together from the column's JSON text, and a configuration is
validated once for the rows it is stored as, not on every read. Each shortcut must give
exactly what reading every row through the ORM and validating it gives.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from lens.agents import config_of, forget_validated, with_config
from lens.core.background import Background
from lens.core.config import AgentConfig
from lens.models import Agent, AuthoredEntry, Capability, SectionDeclaration, Team
from lens.rows import decode_values
from memory.configuring import store_agent
from tests.api_calls import ApiClient, without_revision
from tests.factories import composed, create_agent, with_background
from tests.samples import GRINNING
from web.api.rendering import ApiRenderer

# Values that must come back exactly: type (True is not 1, 1.0 is not 1), every digit of
# an integer beyond 64 bits, escapes, quotes, astral and combining characters.
TRICKY_VALUES: list[Any] = [
    "plain",
    "",
    'quote " backslash \\ slash / tab \t newline \n',
    f"emoji {GRINNING} zażółć 日本語 e\u0301 \u200b",
    "\u2028\u2029\x85",
    "[1, 2]",
    "null",
    0,
    -1,
    9,
    2**63,
    2**70,
    -(2**80),
    0.1,
    -0.0,
    2.5,
    1e-7,
    1e300,
    123456789.123456789,
    True,
    False,
]


def tricky_config(name: str = "Probe") -> dict[str, Any]:
    entries = [{"key": f"k{i}", "value": value} for i, value in enumerate(TRICKY_VALUES)]
    return {
        **with_background(
            {"id": "values", "title": "Values", "entries": entries},
            {"id": "empty", "title": "Empty"},
            {"id": "more", "title": "More", "entries": [{"key": "x", "value": "y"}]},
            name=name,
        ),
        "persona": "Persona.",
        "capabilities": [{"name": "tool", "description": "Does things."}],
        "awareness": [{"name": "Calendar", "description": "Days", "access_method": "tool"}],
        "recall_pinned_candidates": True,
    }


def loaded(agent: Agent) -> Agent:
    return with_config(Agent.objects.filter(pk=agent.pk)).get()


def read_through_the_orm(agent: Agent) -> AgentConfig:
    """What the configuration is when every row is read as a model instance (each value
    decoded by ``JSONField``) and the whole is validated: the reference."""
    agent = Agent.objects.get(pk=agent.pk)
    return AgentConfig.model_validate(
        {
            "name": agent.name,
            "persona": agent.persona,
            "tone": agent.tone,
            "objective": agent.objective,
            "capabilities": [
                {"name": c.name, "description": c.description} for c in agent.capabilities.all()
            ],
            "manual": agent.manual,
            "routing_spec": agent.routing_spec,
            "background": {
                "sections": [
                    {
                        "id": s.section_id,
                        "title": s.title,
                        "promotion": s.promotion,
                        "entries": [{"key": e.key, "value": e.value} for e in s.entries.all()],
                    }
                    for s in agent.sections.all()
                ]
            },
            "awareness": [
                {"name": a.name, "description": a.description, "access_method": a.access_method}
                for a in agent.awareness_sources.all()
            ],
            "recall_pinned_candidates": agent.recall_pinned_candidates,
        }
    )


def typed(value: Any) -> tuple[str, str]:
    """A value with its type, so that ``True`` and ``1`` (equal in Python) differ."""
    return type(value).__name__, repr(value)


def typed_values(config: AgentConfig) -> list[tuple[str, str]]:
    return [
        typed(entry.value) for section in config.background.sections for entry in section.entries
    ]


@pytest.fixture
def validations(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The names of the models validated from now on, starting from an empty cache."""
    forget_validated()
    seen: list[str] = []
    for model in (Background, AgentConfig):
        original = model.model_validate

        def counting(*args: Any, _name: str = model.__name__, _original: Any = original) -> Any:
            seen.append(_name)
            return _original(*args)

        monkeypatch.setattr(model, "model_validate", counting)
    yield seen
    forget_validated()


pytestmark = pytest.mark.django_db


# --- values decoded together --------------------------------------------------------


def test_stored_values_come_back_exactly_as_the_orm_reads_them(team: Team) -> None:
    agent = create_agent(team, "probe", tricky_config())
    forget_validated()

    config = config_of(loaded(agent))

    reference = read_through_the_orm(agent)
    assert config == reference
    assert typed_values(config) == typed_values(reference)
    assert config.model_dump_json() == reference.model_dump_json()


def test_stored_values_keep_their_types_and_digits(team: Team) -> None:
    agent = create_agent(team, "probe", tricky_config())
    forget_validated()

    values = [entry.value for entry in config_of(loaded(agent)).background.sections[0].entries]

    for got, written in zip(values, TRICKY_VALUES, strict=True):
        if isinstance(written, float) and written == int(written) and abs(written) > 2**53:
            # PostgreSQL's jsonb keeps a large whole float as the number it is, in digits
            # (SQLite keeps 1e+300): the ORM reads the same, as the test above checks.
            assert float(got) == written
        elif isinstance(written, float) and written == 0 and connection.vendor == "postgresql":
            # jsonb numbers are numerics, which have no negative zero: -0.0 reads as 0.0
            # (through the ORM too, as the test above checks).
            assert typed(got) == typed(0.0)
        else:
            assert typed(got) == typed(written)


@given(
    st.lists(
        st.one_of(
            st.text(),
            st.integers(),
            st.floats(allow_nan=False),
            st.booleans(),
            st.none(),
            st.lists(st.integers(), max_size=3),
            st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=3),
        ),
        max_size=20,
    )
)
def test_decoding_together_equals_decoding_each(values: list[Any]) -> None:
    texts = [json.dumps(value, ensure_ascii=False) for value in values]
    spaced = [json.dumps(value, indent=1) for value in values]  # as jsonb spaces them, or more

    for written in (texts, spaced):
        decoded = decode_values(written)
        assert [typed(v) for v in decoded] == [typed(json.loads(text)) for text in written]


def test_text_that_is_not_json_reads_as_itself_as_the_field_would() -> None:
    assert decode_values(["1", "not json", '"a"']) == [1, "not json", "a"]
    assert decode_values(["[1", "2]", "3"]) == ["[1", "2]", 3]
    assert decode_values([]) == []


# --- validated once -----------------------------------------------------------------


def test_a_second_read_validates_nothing(team: Team, validations: list[str]) -> None:
    agent = create_agent(team, "probe", tricky_config())
    forget_validated()  # storing it read it back once (for its revision): start cold
    validations.clear()

    first = config_of(loaded(agent))
    assert validations == ["Background", "AgentConfig"]

    validations.clear()
    again = config_of(loaded(agent))
    composition = composed(agent)
    assert validations == []
    assert again is first
    assert composition.background.sections[0] == first.background.sections[0]


def test_the_same_rows_read_the_same_whatever_agent_holds_them(
    team: Team, validations: list[str]
) -> None:
    one = create_agent(team, "one", tricky_config())
    two = create_agent(team, "two", tricky_config())
    config_of(loaded(one))
    validations.clear()

    got = config_of(loaded(two))

    assert validations == []
    assert got == read_through_the_orm(two)


def test_a_write_through_the_api_reads_as_new_rows(
    api: ApiClient, team: Team, validations: list[str]
) -> None:
    agent = create_agent(team, "probe", tricky_config())
    config_of(loaded(agent))
    changed = tricky_config()
    changed["background"]["sections"][2]["entries"] = [{"key": "x", "value": "changed"}]

    assert api.put("/api/agents/probe", changed).status_code == 200
    validations.clear()
    body = api.get("/api/agents/probe").json()

    assert body["background"]["sections"][2]["entries"] == [
        {"key": "x", "value": "changed", "memory_ids": []}
    ]
    assert validations == []  # the PUT's own answer read (and validated) these rows


@pytest.mark.parametrize(
    "edit",
    [
        "entry value",
        "entry key",
        "entry order",
        "section title",
        "section promotion",
        "capability",
        "persona",
        "pinned candidates",
    ],
)
def test_any_changed_row_is_read_and_validated_again(
    team: Team, validations: list[str], edit: str
) -> None:
    """Rows changed behind the operations (the admin edits single rows) are new rows."""
    agent = create_agent(team, "probe", tricky_config())
    before = config_of(loaded(agent))
    values = SectionDeclaration.objects.get(agent=agent, section_id="values")
    match edit:
        case "entry value":
            AuthoredEntry.objects.filter(section=values, key="k9").update(value=1)
        case "entry key":
            AuthoredEntry.objects.filter(section=values, key="k9").update(key="renamed")
        case "entry order":
            AuthoredEntry.objects.filter(section=values, key="k0").update(position=999)
        case "section title":
            SectionDeclaration.objects.filter(pk=values.pk).update(title="Renamed")
        case "section promotion":
            SectionDeclaration.objects.filter(pk=values.pk).update(promotion="auto")
        case "capability":
            Capability.objects.filter(agent=agent).update(description="Other things.")
        case "persona":
            Agent.objects.filter(pk=agent.pk).update(persona="Another persona.")
        case "pinned candidates":
            Agent.objects.filter(pk=agent.pk).update(recall_pinned_candidates=False)
    validations.clear()

    after = config_of(loaded(agent))

    assert "AgentConfig" in validations
    assert after != before
    assert after == read_through_the_orm(agent)
    assert typed_values(after) == typed_values(read_through_the_orm(agent))


def test_a_value_that_changes_only_its_type_is_read_again(team: Team) -> None:
    """``1`` and ``True`` are equal in Python; the cache tells their stored texts apart."""
    agent = create_agent(team, "probe", with_background({"id": "a", "title": "A"}))
    section = SectionDeclaration.objects.get(agent=agent)
    entry = AuthoredEntry.objects.create(section=section, key="flag", value=1)
    assert config_of(loaded(agent)).background.sections[0].entries[0].value is not True

    AuthoredEntry.objects.filter(pk=entry.pk).update(value=True)

    assert config_of(loaded(agent)).background.sections[0].entries[0].value is True


def test_rows_that_no_longer_validate_raise_on_every_read_and_the_doctor_says_so(
    team: Team,
) -> None:
    agent = create_agent(team, "probe", tricky_config())
    config_of(loaded(agent))  # the valid rows are cached
    SectionDeclaration.objects.filter(agent=agent, section_id="more").update(title="Current State")

    for _ in range(2):
        with pytest.raises(ValidationError, match="reserved"):
            config_of(loaded(agent))
    with pytest.raises(CommandError):
        call_command("doctor", stdout=StringIO(), stderr=(errors := StringIO()))
    assert "agent" in errors.getvalue()
    assert "does not validate" in errors.getvalue()


# --- the endpoints answer as before -------------------------------------------------


def standard_json(data: Any) -> Any:
    """``data`` as the standard-library encoder the API used to render with writes it."""
    return json.loads(json.dumps(data, cls=ApiRenderer.encoder_class))


def cold_then_warm(api: ApiClient, path: str) -> Any:
    """``path``'s answer read with nothing validated yet, checked to be byte for byte
    the answer of the next read (everything validated then)."""
    forget_validated()
    cold = api.get(path)
    warm = api.get(path)
    assert cold.status_code == 200
    assert warm.content == cold.content
    return cold.json()


def test_the_config_endpoint_answers_what_the_orm_rows_validate_to(
    api: ApiClient, team: Team
) -> None:
    agent = create_agent(team, "probe", tricky_config())
    cold = cold_then_warm(api, "/api/agents/probe")
    assert without_revision(cold) == standard_json(read_through_the_orm(agent).model_dump())


def test_the_composition_endpoint_answers_the_same_cold_and_warm(
    api: ApiClient, team: Team
) -> None:
    agent = create_agent(team, "probe", tricky_config())
    cold = cold_then_warm(api, "/api/agents/probe/composition")
    # The endpoint adds the prompt against its model's window (none declared here).
    no_model = {"model": None, "window": None, "share": None, "level": None}
    assert cold == {**standard_json(composed(agent).model_dump()), "context": no_model}
    assert cold["background"] == standard_json(read_through_the_orm(agent).background.model_dump())


def test_reads_cost_the_same_queries_cold_warm_and_whatever_the_size(
    api: ApiClient, team: Team, django_assert_max_num_queries: Any
) -> None:
    small = with_background({"id": "a", "title": "A", "entries": [{"key": "k", "value": 1}]})
    big = with_background(
        *(
            {
                "id": f"s{s}",
                "title": f"S {s}",
                "entries": [{"key": f"k{e}", "value": f"v {e}"} for e in range(20)],
            }
            for s in range(10)
        )
    )
    store_agent(team, "small", AgentConfig.model_validate(small))
    store_agent(team, "big", AgentConfig.model_validate(big))
    forget_validated()

    with django_assert_max_num_queries(20) as cold:
        assert api.get("/api/agents/small/composition").status_code == 200
    for path in ("/api/agents/small/composition", "/api/agents/big/composition"):
        for _ in range(2):
            with django_assert_max_num_queries(len(cold), info=path):
                assert api.get(path).status_code == 200
