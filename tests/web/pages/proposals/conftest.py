"""A protected Wren with memories in both its sections, and a change rhea proposed that
removes its preferences section (so the preference it composes would leave the prompt)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from lens.actors import Actor
from lens.models import Agent, Proposal, Team
from memory.decisions import decide
from tests.factories import create_agent, logged_in, memory_config, propose, remember


def protected_config() -> dict[str, Any]:
    return memory_config(protected=True)


def without_preferences() -> dict[str, Any]:
    config = copy.deepcopy(protected_config())
    config["background"]["sections"].pop(1)
    return config


def retoned(tone: str) -> dict[str, Any]:
    return {**protected_config(), "tone": tone}


@pytest.fixture
def wren(team: Team) -> Agent:
    return create_agent(team, "wren", protected_config())


@pytest.fixture
def memories(wren: Agent, reviewer: User) -> dict[str, str]:
    drink = remember(wren, "preference", "Tea, never coffee.", label="drink")
    decide(drink, True, Actor.for_user(reviewer))
    return {"name": remember(wren, "profile", "Mira K.", label="name"), "drink": drink}


@pytest.fixture
def proposal(wren: Agent, memories: dict[str, str], rhea: User) -> Proposal:
    return propose(wren.team, "wren", without_preferences(), rhea)


@pytest.fixture
def rhea_client(rhea: User) -> Client:
    return logged_in(rhea)
