"""Fixtures only: the cast (members, reviewers, a member of another team, API clients),
the memory story, and the browser. What tests build and read lives in ``tests.factories``,
``tests.samples`` and ``tests.pages``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

from lens.actors import Actor
from lens.models import Agent, ApiToken, SectionDeclaration, Team
from memory.decisions import decide
from tests.api_calls import ApiClient
from tests.factories import (
    Story,
    create_agent,
    grant,
    logged_in,
    make_user,
    memory_config,
    remember,
)
from tests.pages import FormData, admin_agent_url, admin_section_url, form_data

# Generating inputs is timed against the wall clock; on a shared, loaded machine a
# strategy that takes 0.1 s in a quiet run can take a second. The properties still run
# their examples; only that timing check is off.
hypothesis_settings.register_profile("suite", suppress_health_check=[HealthCheck.too_slow])
hypothesis_settings.load_profile("suite")


@pytest.fixture(autouse=True)
def _fast_hashing(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def team(db: None) -> Team:
    return Team.objects.create(slug="acme", name="Acme")


@pytest.fixture
def other_team(db: None) -> Team:
    return Team.objects.create(slug="globex", name="Globex")


@pytest.fixture
def member(team: Team) -> User:
    return make_user("mira", team)


@pytest.fixture
def stranger(other_team: Team) -> User:
    return make_user("sam", other_team)


@pytest.fixture
def member_client(member: User) -> Client:
    return logged_in(member)


@pytest.fixture
def stranger_client(stranger: User) -> Client:
    return logged_in(stranger)


@pytest.fixture
def agent(team: Team) -> Agent:
    return create_agent(team)


@pytest.fixture
def wren(team: Team) -> Agent:
    """Wren routed by ``user-background`` (``memory_config()``): profile memories land in
    an auto section beside the authored ``timezone``, preferences wait in a guarded one."""
    return create_agent(team, "wren", memory_config())


@pytest.fixture
def api(team: Team) -> ApiClient:
    _token, raw = ApiToken.objects.issue(team)
    return ApiClient(raw)


@pytest.fixture
def other_api(other_team: Team) -> ApiClient:
    _token, raw = ApiToken.objects.issue(other_team)
    return ApiClient(raw)


@pytest.fixture
def anon_api() -> ApiClient:
    return ApiClient(None)


@pytest.fixture
def token_prefix(team: Team, api: ApiClient) -> str:
    """The prefix of the one token ``api`` sends (memories it saves name it)."""
    return ApiToken.objects.get(team=team).prefix


@pytest.fixture
def reviewer(member: User) -> User:
    """mira, a member of acme holding ``memory.approve_promotion``."""
    return grant(member)


@pytest.fixture
def reviewer_client(reviewer: User) -> Client:
    return logged_in(reviewer)


@pytest.fixture
def rhea(team: Team) -> User:
    """A second reviewer of acme."""
    return grant(make_user("rhea", team))


@pytest.fixture
def viewer(team: Team) -> User:
    """A member of acme without the permission."""
    return make_user("vic", team)


@pytest.fixture
def viewer_client(viewer: User) -> Client:
    return logged_in(viewer)


@pytest.fixture
def story(team: Team, member: User) -> Story:
    """Wren with a memory for every reason a memory can miss the prompt, and three that
    make it (SPEC §5.6)."""
    reviewer = Actor.for_user(member)
    ids: dict[str, str] = {}

    # Save-time outcomes that depend on the declarations at that moment.
    agent = create_agent(team, "wren", memory_config(preferences="locked"))
    ids["locked"] = remember(agent, "preference", "Prefers vim.", label="editor")
    agent = create_agent(team, "wren", memory_config(preferences="earned"))
    ids["earned"] = remember(agent, "preference", "Likes jazz.", label="music")
    agent = create_agent(team, "wren", memory_config(preferences=None))
    ids["undeclared"] = remember(agent, "preference", "Plays chess.", label="game")
    agent = create_agent(team, "wren", memory_config())

    ids["declined"] = remember(agent, "fact", "The user once visited Kraków.")
    ids["pending"] = remember(agent, "preference", "Prefers a dark theme.", label="theme")
    ids["rejected"] = remember(agent, "preference", "Wants daily jokes.", label="jokes")
    decide(ids["rejected"], False, reviewer, "not useful")
    ids["approved_pref"] = remember(agent, "preference", "Tea, never coffee.", label="drink")
    decide(ids["approved_pref"], True, reviewer)
    ids["old_name"] = remember(agent, "profile", "Mira", label="name")
    ids["name"] = remember(agent, "profile", "Mira K.", label="Name", supersedes=ids["old_name"])
    ids["authored"] = remember(agent, "profile", "UTC", label="timezone")
    ids["city"] = remember(agent, "profile", 'Lives in <Gdańsk> & "likes" the sea')
    return Story(
        agent=agent,
        ids=ids,
        expected_drops={
            ids["locked"]: "locked-section",
            ids["earned"]: "earning",
            ids["undeclared"]: "undeclared-section",
            ids["declined"]: "spec-declined",
            ids["pending"]: "awaiting-approval",
            ids["rejected"]: "rejected",
            ids["old_name"]: "superseded",
            ids["authored"]: "authored-wins",
        },
        composed_ids={ids["approved_pref"], ids["name"], ids["city"]},
    )


# --- browser -----------------------------------------------------------------------


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """One Chromium for the session (``CHROMIUM`` names another binary)."""
    from playwright.sync_api import sync_playwright

    executable = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    args = [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ]

    # Playwright's sync API runs an event loop; Django's ORM calls made by the test
    # itself (fixtures, assertions) are still plain synchronous code.
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=executable, args=args)
        yield instance
        instance.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(10_000)
    yield page
    context.close()


@pytest.fixture
def duo(team: Team, other_team: Team) -> User:
    """A user in both teams: acme (first by slug, so the default) and globex."""
    return make_user("duo", other_team, team)


@pytest.fixture
def duo_client(duo: User) -> Client:
    client = Client()
    client.force_login(duo)
    return client


# The admin's superuser, a client logged in as them, the sample agent's section that holds
# authored entries, and the forms of their admin pages as a browser submits them unchanged.


@pytest.fixture
def root(team: Team) -> User:
    """A superuser who is also a member of acme (so the lens opens for them too)."""
    return make_user("root", team, is_staff=True, is_superuser=True)


@pytest.fixture
def admin_client(root: User) -> Client:
    return logged_in(root)


@pytest.fixture
def ground_rules(agent: Agent) -> SectionDeclaration:
    """The sample agent's locked section of four authored entries."""
    return agent.sections.get(section_id="ground_rules")


@pytest.fixture
def agent_form(admin_client: Client, agent: Agent) -> FormData:
    return form_data(admin_client, admin_agent_url(agent), "agent_form")


@pytest.fixture
def section_form(admin_client: Client, ground_rules: SectionDeclaration) -> FormData:
    return form_data(admin_client, admin_section_url(ground_rules), "sectiondeclaration_form")


@pytest.fixture
def api_token(team: Team, api: ApiClient) -> ApiToken:
    """The one token ``api`` sends."""
    return ApiToken.objects.get(team=team)
