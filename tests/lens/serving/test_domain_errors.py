"""Domain errors (``lens.core.errors``) and the one table that turns their codes into
HTTP statuses (``web.api.error_envelope.STATUS_BY_CODE``, SPEC §8).
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

# Every module that defines a domain error: importing them registers the subclasses.
import kvstore.store
import lens.agents
import memory.bundles.importing
import memory.core.bundle_format
import memory.decisions
import memory.erasure
import memory.queries
import memory.registry
import memory.saving
import memory.search
import web.mcp.calls  # noqa: F401  (its domain errors register on import)
from lens.core.errors import SPECIFIC_CODES, DomainError, InvalidInput, invalid_input
from lens.models import Agent
from lens.serving.envelope import STATUS_BY_CODE, from_domain
from tests.api_calls import ApiClient

# Bases that are never raised themselves: InvalidInput takes its code per instance, and
# StoreError only groups the key/value errors (its placeholder code never reaches a client).
ABSTRACT = {DomainError, InvalidInput, kvstore.store.StoreError}


def subclasses(base: type[DomainError]) -> list[type[DomainError]]:
    found = []
    for cls in base.__subclasses__():
        found.append(cls)
        found.extend(subclasses(cls))
    return found


# Annotated: mypy types the bare display ``(DomainError, *subclasses(...))`` as
# ``tuple[object, ...]``, which would lose ``code`` and ``__name__`` below.
FAMILY: list[type[DomainError]] = [DomainError, *subclasses(DomainError)]

# Application classes only: a test double defined in some test module must not change
# what each xdist worker collects.
ALL_CLASSES = sorted(
    {cls for cls in FAMILY if cls.__module__.split(".")[0] in {"lens", "memory", "kvstore"}},
    key=lambda cls: f"{cls.__module__}.{cls.__qualname__}",
)
CONCRETE = [cls for cls in ALL_CLASSES if cls not in ABSTRACT]


def concrete_params() -> list[object]:
    return [pytest.param(cls, id=cls.__name__) for cls in CONCRETE]


# --- the classes and the table ----------------------------------------------------------


def test_the_walk_finds_every_domain_error_of_every_package() -> None:
    names = {cls.__name__ for cls in CONCRETE}
    assert {
        "AgentNotFound",
        "InvalidSlug",
        "UnknownRoutingSpec",
        "UnknownSupersedes",
        "NotAllPending",
        "InvalidQuery",
        "InvalidKey",
        "KeyNotFound",
        "VersionNotFound",
        "PayloadTooLarge",
        "VersionConflict",
    } <= names
    assert lens.agents.AgentNotFound in CONCRETE
    assert memory.registry.UnknownRoutingSpec in CONCRETE
    assert memory.saving.UnknownSupersedes in CONCRETE
    assert memory.search.InvalidQuery in CONCRETE


@pytest.mark.parametrize("cls", concrete_params())
def test_every_domain_error_code_has_a_status(cls: type[DomainError]) -> None:
    assert cls.code in STATUS_BY_CODE


@pytest.mark.parametrize("cls", CONCRETE, ids=lambda cls: cls.__name__)
def test_every_domain_error_has_its_own_snake_case_code(cls: type[DomainError]) -> None:
    assert re.fullmatch(r"[a-z][a-z0-9]*(_[a-z0-9]+)*", cls.code)
    assert cls.code != DomainError.code
    others = [other for other in CONCRETE if other is not cls and other.code == cls.code]
    assert others == []


@pytest.mark.parametrize("cls", ALL_CLASSES, ids=lambda cls: cls.__name__)
def test_no_domain_error_knows_an_http_status(cls: type[DomainError]) -> None:
    assert not hasattr(cls, "status")
    assert not hasattr(cls, "status_code")


@pytest.mark.parametrize("code", [*SPECIFIC_CODES.values(), "invalid_request"])
def test_every_validation_code_answers_422(code: str) -> None:
    assert STATUS_BY_CODE[code] == 422


def test_every_status_in_the_table_is_an_error_status() -> None:
    assert all(400 <= status < 600 for status in STATUS_BY_CODE.values())


# --- invalid_input ---------------------------------------------------------------------


def test_invalid_input_takes_its_code_from_the_first_problem_and_lists_every_problem() -> None:
    error = invalid_input([("label", "too long"), ("kind", "bad kind"), ("tags.0", "empty")])
    assert error.code == "invalid_label"
    assert error.message == "label: too long"
    assert error.details["errors"] == [
        {"loc": "label", "message": "too long"},
        {"loc": "kind", "message": "bad kind"},
        {"loc": "tags.0", "message": "empty"},
    ]


def test_invalid_input_reads_only_the_first_segment_of_a_dotted_path() -> None:
    assert invalid_input([("background.sections.0.id", "bad id")]).code == "invalid_background"
    assert invalid_input([("tags.3", "too long")]).code == "invalid_tags"


@pytest.mark.parametrize("loc", ["name", "labels", "kinds.0", "persona.label", "body"])
def test_a_path_without_a_specific_code_is_an_invalid_request(loc: str) -> None:
    assert invalid_input([(loc, "wrong"), ("label", "wrong too")]).code == "invalid_request"


def test_a_problem_without_a_location_is_about_the_body() -> None:
    error = invalid_input([("", "not an object")])
    assert (error.code, error.message) == ("invalid_request", "body: not an object")
    assert error.details["errors"] == [{"loc": "body", "message": "not an object"}]


def test_a_missing_field_reads_as_a_sentence() -> None:
    error = invalid_input([("kind", "Field required")])
    assert (error.code, error.message) == ("invalid_kind", "kind is required")


def test_no_problems_still_make_one_invalid_request() -> None:
    error = invalid_input([])
    assert isinstance(error, InvalidInput)
    assert (error.code, error.details["errors"]) == ("invalid_request", [])


segment = st.one_of(
    st.sampled_from(sorted(SPECIFIC_CODES)), st.from_regex(r"[a-z_]{1,10}", fullmatch=True)
)
loc = st.lists(st.one_of(segment, st.integers(0, 9).map(str)), min_size=1, max_size=4).map(".".join)


@given(st.lists(st.tuples(loc, st.text(min_size=1, max_size=20)), min_size=1, max_size=5))
def test_the_code_is_the_first_segments_specific_code_and_every_problem_is_listed(
    problems: list[tuple[str, str]],
) -> None:
    error = invalid_input(problems)
    first = problems[0][0].split(".")[0]
    assert error.code == SPECIFIC_CODES.get(first, "invalid_request")
    assert error.details["errors"] == [{"loc": at, "message": why} for at, why in problems]
    assert error.envelope()["error"]["code"] == error.code
    assert STATUS_BY_CODE[error.code] == 422


# --- the envelope ----------------------------------------------------------------------


def test_the_envelope_holds_the_code_the_message_and_every_detail() -> None:
    error = kvstore.store.PayloadTooLarge("Too big.", limit=36_000, runes=36_001)
    assert error.envelope() == {
        "error": {
            "code": "payload_too_large",
            "message": "Too big.",
            "limit": 36_000,
            "runes": 36_001,
        }
    }
    assert str(error) == "Too big."


def test_a_bare_domain_error_has_an_envelope_too() -> None:
    assert DomainError("No.").envelope() == {"error": {"code": "error", "message": "No."}}


def test_an_invalid_input_envelope_carries_its_own_code_and_the_problems() -> None:
    envelope = invalid_input([("kind", "bad")]).envelope()
    assert envelope == {
        "error": {
            "code": "invalid_kind",
            "message": "kind: bad",
            "errors": [{"loc": "kind", "message": "bad"}],
        }
    }


def test_from_domain_maps_the_code_to_its_status_and_keeps_the_details() -> None:
    answer = from_domain(kvstore.store.VersionConflict("Moved on.", current_version=3))
    assert (answer.status, answer.code, answer.message) == (409, "version_conflict", "Moved on.")
    assert answer.details == {"current_version": 3}


# --- through the API -------------------------------------------------------------------


@pytest.mark.django_db
def test_an_unknown_agent_answers_404_agent_not_found(api: ApiClient) -> None:
    response = api.get("/api/agents/nope")
    assert response.status_code == 404
    error = response.json()["error"]
    assert error["code"] == "agent_not_found"
    assert "nope" in error["message"]


@pytest.mark.django_db
def test_another_teams_agent_answers_exactly_as_a_missing_one(
    agent: Agent, other_api: ApiClient
) -> None:
    response = other_api.get(f"/api/agents/{agent.slug}")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "agent_not_found"
