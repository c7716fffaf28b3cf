"""The demo agents' routing cases (SPEC §18.1): what a person expects of each agent's
routing, written where it holds and where it does not, so the routing page tells a
story. Each agent's honest failures:

- wren: a health fact and a goal a person would pin "About the User" (the
  user-background spec declines every kind but profile and preference), and a reminder
  preference saved as a profile (placed in About the User, expected with preferences);
- sentinel: decisions a person expects in "Project Context", which the project spec
  routes there and the agent does not declare (undeclared-section);
- atlas: the customer's plan, saved as kind ``account``, which the spec declines.

Seeding adds an agent's cases only when it has none: cases people changed are theirs.
"""

from __future__ import annotations

from lens.actors import Actor
from lens.models import Agent
from memory.core.routing_eval import CaseInput
from memory.models import RoutingCase
from memory.routing_cases import replace_cases

Row = tuple[str, str, str, str | None, str | None]  # name, kind, content, label, expect


def _profiles(section: str, rows: list[tuple[str, str, str]]) -> list[Row]:
    return [(name, "profile", content, label, section) for name, content, label in rows]


def _preferences(section: str, rows: list[tuple[str, str, str]]) -> list[Row]:
    return [(name, "preference", content, label, section) for name, content, label in rows]


WREN: list[Row] = [
    *_profiles(
        "user_profile",
        [
            ("name", "The user's name is Doug.", "name"),
            ("city", "Doug lives in Lisbon.", "city"),
            ("job", "Works as a backend engineer.", "job"),
            ("pronouns", "Uses he/him pronouns.", "pronouns"),
            ("partner", "His partner is called Inês.", "partner"),
            ("birthday", "His birthday is on 12 May.", "birthday"),
            ("languages", "Speaks English and some Portuguese.", "languages"),
            ("timezone", "Lives on Lisbon time (WET).", "timezone"),
        ],
    ),
    *_preferences(
        "user_preferences",
        [
            ("coffee", "Takes his coffee black.", "coffee"),
            ("reminders", "Wants reminders the evening before.", "reminders"),
            ("tone", "Prefers short answers without bullet lists.", "tone"),
            ("units", "Use metric units.", "units"),
            ("music", "Likes jazz while working.", "music"),
            ("news", "No news summaries before 9 a.m.", "news"),
        ],
    ),
    ("a walk", "episode", "Went for a walk along the river on Sunday.", None, None),
    ("a call", "episode", "Called his mother after work.", None, None),
    ("a film", "episode", "Watched a documentary about trains.", None, None),
    ("a trip", "episode", "Spent the weekend in Porto.", None, None),
    ("a fact about the weather", "fact", "It rained all week in Lisbon.", None, None),
    ("a passing mood", "mood", "Felt tired on Tuesday.", None, None),
    ("small talk", "chat", "Asked how my day was.", None, None),
    # Honest failures: what a person would pin that the spec does not place.
    ("an allergy", "health", "Doug is allergic to peanuts.", "allergy", "user_profile"),
    ("a goal", "goal", "Wants to run a half marathon in October.", "goal", "user_profile"),
    (
        "a reminder saved as a profile",
        "profile",
        "Remind him about the dentist the evening before.",
        "dentist",
        "user_preferences",
    ),
]

SENTINEL: list[Row] = [
    *[
        (f"convention: {label}", "convention", content, label, "conventions")
        for label, content in [
            ("http-retries", "Wrap external HTTP calls in the retry helper."),
            ("feature-flags", "Name feature flags team.feature.purpose."),
            ("logging-amounts", "Log amounts with their currency code."),
            ("money", "Amounts are integer minor units."),
            ("migrations", "Every migration must be reversible."),
            ("tests", "Every bug fix comes with a regression test."),
            ("naming", "Services are named for what they own, not for a team."),
            ("timeouts", "Every outbound call has an explicit timeout."),
        ]
    ],
    *[
        (f"state: {label}", "state", content, label, "project_state")
        for label, content in [
            ("release", "Release 4.2 is frozen; only refund fixes merge."),
            ("ledger-migration", "The ledger migration is 60% done."),
            ("tokenisation", "Card tokenisation moved to the vault service."),
            ("quarantine", "Two flaky tests are quarantined on CI."),
            ("on-call", "This week's on-call is the payouts rotation."),
        ]
    ],
    ("an incident", "incident", "The payout job failed twice on Monday.", None, None),
    ("a question", "question", "Why do refunds take three days?", None, None),
    ("a review note", "review", "This PR needs a second reviewer.", None, None),
    ("a link", "link", "The runbook lives in the wiki.", None, None),
    ("a person", "person", "Ana owns the ledger.", None, None),
    # Honest failures: the project spec sends decisions to project_context, which
    # sentinel does not declare.
    (
        "decision: payout locks",
        "decision",
        "We chose PostgreSQL advisory locks over Redis for payout dedupe.",
        "payout-locks",
        "project_context",
    ),
    (
        "decision: idempotency keys",
        "decision",
        "Idempotency keys live 24 hours.",
        "idempotency",
        "project_context",
    ),
    (
        "decision: no ORM in reports",
        "decision",
        "Reports use plain SQL, never the ORM.",
        "reports-sql",
        "project_context",
    ),
]

ATLAS: list[Row] = [
    *_profiles(
        "user_profile",
        [
            ("company", "The customer works at Globex.", "company"),
            ("role", "The customer is the finance lead.", "role"),
            ("country", "Billing address in Spain.", "country"),
            ("vat", "Has a VAT number on file.", "vat"),
            ("since", "A customer since 2021.", "since"),
            ("seats", "Pays for 40 seats.", "seats"),
            ("fiscal-year", "Their fiscal year starts in April.", "fiscal-year"),
        ],
    ),
    *_preferences(
        "user_preferences",
        [
            ("language", "Prefers replies in Spanish.", "language"),
            ("channel", "Wants answers by email, not chat.", "channel"),
            ("invoices", "Wants invoices as PDF.", "invoices"),
            ("contact", "Contact the billing alias, not the person.", "contact"),
        ],
    ),
    ("a ticket", "ticket", "Asked why the March invoice was higher.", None, None),
    ("a refund", "episode", "Got a refund for a duplicate charge.", None, None),
    ("a complaint", "episode", "Complained about the new pricing page.", None, None),
    ("a thank-you", "chat", "Said thanks for the quick answer.", None, None),
    ("a card", "episode", "Updated the card on file.", None, None),
    ("an outage", "incident", "Could not log in during Tuesday's outage.", None, None),
    ("a question", "question", "Asked whether seats can be moved between teams.", None, None),
    # Honest failures: what a person would keep about the customer that the
    # user-background spec declines.
    ("the plan", "account", "The customer is on the Business plan.", "plan", "user_profile"),
    ("renewal", "account", "The contract renews on 1 September.", "renewal", "user_profile"),
]

DEMO_CASES: dict[str, list[Row]] = {"wren": WREN, "sentinel": SENTINEL, "atlas": ATLAS}


def seed_cases(agent: Agent, actor: Actor) -> int:
    """The agent's demo cases, when it has none yet; how many were added."""
    rows = DEMO_CASES.get(agent.slug, [])
    if not rows or RoutingCase.objects.filter(agent=agent).exists():
        return 0
    cases = [
        CaseInput.model_validate(
            {"name": name, "kind": kind, "content": content, "label": label,
             "expect": {"section": expect}}
        )
        for name, kind, content, label, expect in rows
    ]  # fmt: skip
    return replace_cases(agent, cases, actor)
