"""The words for a memory's place (``memory.core.explain``): one sentence per reason,
naming what keeps the memory out, with links where it names another page.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone

import pytest

from memory.core.explain import (
    GROUP_TITLES,
    IN_PROMPT,
    NOT_IN_PROMPT,
    SHORT_WORDS,
    UNREADABLE,
    UNROUTED,
    Facts,
    Link,
    chars,
    explain,
    group_title,
    quoted,
    short_words,
    tone_of,
    utc,
)
from memory.core.report import DROP_REASONS

WHEN = datetime(2025, 6, 1, 14, 3, 59, tzinfo=UTC)


def said(**facts: object) -> str:
    return explain(Facts("m1", **facts)).sentence  # type: ignore[arg-type]  # each test's own fields


# --- the vocabulary -------------------------------------------------------------------


def test_every_reason_has_a_title_short_words_and_a_sentence_of_its_own() -> None:
    reasons = (*DROP_REASONS, UNREADABLE, UNROUTED)
    assert set(GROUP_TITLES) == set(SHORT_WORDS) == set(reasons)
    sentences = {reason: said(reason=reason) for reason in reasons}
    for reason, sentence in sentences.items():
        assert sentence.endswith("."), reason
        assert reason not in sentence or reason in ("rejected", "revoked"), reason
    assert len(set(sentences.values())) == len(reasons)


def test_the_state_words_are_the_same_everywhere() -> None:
    composed = explain(Facts("m1", section="user_profile", section_title="About", key="name"))
    assert composed.in_prompt
    assert composed.state == IN_PROMPT == "In the prompt"
    assert composed.short == short_words(None) == "in the prompt"
    assert composed.tone == "in"
    left_out = explain(Facts("m1", reason="over-budget"))
    assert not left_out.in_prompt
    assert left_out.state == NOT_IN_PROMPT == "Not in the prompt"
    assert left_out.reason == "over-budget"


@pytest.mark.parametrize(
    ("reason", "words", "title"),
    [
        ("awaiting-approval", "waiting for approval", "Waiting for approval"),
        ("over-budget", "over budget", "Over the memory budget"),
        ("authored-wins", "authored entry wins", "An authored entry wins"),
        ("superseded", "superseded", "Replaced by a newer memory"),
        ("erased", "erased", "Erased"),
        ("rejected", "rejected", "Rejected"),
        ("revoked", "revoked", "Revoked"),
        ("spec-declined", "recall only", "Recall only"),
    ],
)
def test_short_words_and_group_titles(reason: str, words: str, title: str) -> None:
    assert short_words(reason) == words
    assert group_title(reason) == title


def test_no_state_reads_as_an_error() -> None:
    assert tone_of("awaiting-approval") == "wait"
    for reason in ("rejected", "revoked", "superseded", "spec-declined", "erased"):
        assert tone_of(reason) == "quiet"
    for reason in ("over-budget", "authored-wins", "locked-section", "reconciled"):
        assert tone_of(reason) == "note"
    assert tone_of(None) == "in"


# --- one sentence per reason -----------------------------------------------------------


def test_in_the_prompt_names_the_section_and_key() -> None:
    assert said(section="user_profile", section_title="About the User", key="name") == (
        "It fills “name” in About the User."
    )
    place = explain(Facts("m1", section="user_profile", section_title="About", key="name"))
    assert place.place == "About → name"


def test_authored_wins_names_the_authored_key_and_value() -> None:
    sentence = said(
        reason="authored-wins",
        section="user_profile",
        section_title="About the User",
        key="timezone",
        authored_value="Europe/Warsaw",
    )
    assert sentence == (
        "The authored entry “timezone” in About the User holds the same key and wins: "
        "“Europe/Warsaw”."
    )


def test_a_long_authored_value_is_cut_on_one_line() -> None:
    sentence = said(reason="authored-wins", key="bio", authored_value="word\n" * 100)
    assert "\n" not in sentence
    assert sentence.endswith("…”")
    assert len(sentence) < 200


def test_superseded_links_to_the_newer_memory() -> None:
    found = explain(Facts("m1", reason="superseded", other_id="m2", other_words="Mira Kowalska"))
    assert found.sentence == "A newer memory replaced it: “Mira Kowalska”."
    assert found.links == (Link("memory", "m2"),)
    linked = [piece.text for piece in found.pieces if piece.link]
    assert linked == ["“Mira Kowalska”"]


def test_erased_says_who_when_and_why_and_nothing_of_the_memory() -> None:
    sentence = said(
        reason="erased",
        decided_by="mira",
        decided_at=datetime(2026, 3, 1, 14, 3, tzinfo=UTC),
        note="Request #42 from the user",
    )
    assert sentence == (
        "Erased by mira on 2026-03-01 14:03 UTC: “Request #42 from the user”. "
        "Its content, label and tags are gone for good."
    )


def test_erased_without_facts_still_says_it_is_gone() -> None:
    assert said(reason="erased") == (
        "Erased by someone. Its content, label and tags are gone for good."
    )


def test_superseded_without_its_words_still_names_and_links_the_memory() -> None:
    found = explain(Facts("m1", reason="superseded", other_id="m2"))
    assert found.sentence == "A newer memory replaced it: memory m2."
    assert found.links == (Link("memory", "m2"),)


def test_over_budget_says_needed_left_and_the_budget_with_separators() -> None:
    sentence = said(reason="over-budget", needed=212, left=72, budget=3000)
    assert sentence == (
        "Over the memory budget: its line needs 212 chars and 72 of 3,000 are left."
    )
    big = said(reason="over-budget", needed=1234, left=1000, budget=12000)
    assert "needs 1,234 chars and 1,000 of 12,000 are left" in big


def test_undeclared_section_names_the_missing_section() -> None:
    sentence = said(reason="undeclared-section", section="user_preferences", key="theme")
    assert sentence == (
        "It was routed to the section user_preferences as “theme”, which this agent "
        "does not declare."
    )


def test_locked_and_earned_name_the_section_and_its_tier() -> None:
    locked = said(reason="locked-section", section="rules", section_title="Ground Rules")
    assert locked == "Ground Rules is a locked section: memory never fills it."
    earned = said(
        reason="earning",
        section="prefs",
        section_title="User Preferences",
        seen=2,
        needed_sessions=3,
    )
    assert earned == (
        "User Preferences is earned: this memory enters the prompt once it has been saved "
        "in 3 distinct sessions. It has been seen in 2 of 3 sessions."
    )


def test_a_sighting_names_the_memory_it_saw_and_its_count() -> None:
    found = explain(
        Facts(
            "m2",
            reason="corroborating",
            section="prefs",
            section_title="User Preferences",
            other_id="m1",
            other_words="Likes jazz.",
            seen=1,
            needed_sessions=3,
        )
    )
    assert found.sentence == (
        "It saw again “Likes jazz.”, which is seen in 1 of 3 sessions and joins User "
        "Preferences once it has earned its place."
    )
    assert found.links == (Link("memory", "m1"),)
    assert found.tone == "wait"
    # A section no longer declared has no title: its id stands in.
    assert said(reason="locked-section", section="rules").startswith("rules is a locked")


def test_spec_declined_names_the_spec_and_the_kind() -> None:
    sentence = said(
        reason="spec-declined", kind="fact", spec_key="user-background", spec_version="1"
    )
    assert sentence.startswith(
        "The routing spec user-background v1 does not place memories of kind “fact”"
    )
    assert "recall-only" in sentence
    assert said(reason="spec-declined", kind="fact").startswith("The agent had no routing spec")


def test_awaiting_approval_names_the_section_since_when_and_links_the_queue() -> None:
    found = explain(
        Facts(
            "m1",
            reason="awaiting-approval",
            agent="wren",
            section="user_preferences",
            section_title="User Preferences",
            since=WHEN,
        )
    )
    assert found.sentence.startswith(
        "Waiting for approval since 2025-06-01 14:03 UTC: User Preferences is a guarded section"
    )
    assert found.links == (Link("approvals", "wren"),)
    assert found.tone == "wait"


def test_a_reopened_memory_says_who_reopened_it_and_when_not_its_tier() -> None:
    facts = Facts(
        "m1",
        reason="awaiting-approval",
        agent="wren",
        section="user_profile",
        section_title="About the User",
        tier="auto",
        since=WHEN,
        reopened_by="rhea",
        reopened_at=WHEN,
        note="asked again\nby the user",
    )
    found = explain(facts)
    assert found.sentence.startswith(
        "Reopened by rhea on 2025-06-01 14:03 UTC (“asked again by the user”); "
        "waits for a reviewer's decision. Review it in the approval queue"
    )
    assert "guarded" not in found.sentence
    assert found.links == (Link("approvals", "wren"),)
    unexplained = explain(replace(facts, reopened_by=None, note=""))
    assert unexplained.sentence.startswith("Reopened by a reviewer on 2025-06-01 14:03 UTC;")


@pytest.mark.parametrize(("reason", "verb"), [("rejected", "Rejected"), ("revoked", "Revoked")])
def test_a_decision_names_who_when_and_why(reason: str, verb: str) -> None:
    sentence = said(reason=reason, decided_by="rhea", decided_at=WHEN, note="not about the user")
    assert sentence.startswith(f"{verb} by rhea on 2025-06-01 14:03 UTC")
    assert sentence.endswith(": “not about the user”.")
    assert said(reason=reason, decided_by="rhea", decided_at=WHEN).endswith("; no reason given.")
    assert said(reason=reason).startswith(f"{verb} by a reviewer")


def test_revoked_never_reads_as_rejected() -> None:
    sentence = said(reason="revoked", decided_by="rhea", decided_at=WHEN)
    assert "reject" not in sentence.lower()
    assert "after it was approved" in sentence


def test_reconciled_links_to_the_memory_that_won() -> None:
    found = explain(
        Facts(
            "m1",
            reason="reconciled",
            section="user_profile",
            section_title="About the User",
            key="name",
            other_id="m9",
            other_words="Mira K.",
        )
    )
    assert found.sentence == (
        "Another memory at the same place (“name” in About the User) won: “Mira K.”"
    )
    assert found.links == (Link("memory", "m9"),)


def test_an_unknown_reason_is_still_said() -> None:
    assert said(reason="something-new") == "Left out: something-new."


# --- formatting -------------------------------------------------------------------------


def test_times_are_absolute_utc_whatever_the_zone() -> None:
    assert utc(WHEN) == "2025-06-01 14:03 UTC"
    warsaw = timezone(timedelta(hours=2))
    assert utc(WHEN.astimezone(warsaw)) == "2025-06-01 14:03 UTC"
    assert utc(WHEN.replace(tzinfo=None)) == "2025-06-01 14:03 UTC"


def test_numbers_and_quotes() -> None:
    assert chars(2928) == "2,928"
    assert chars(7) == "7"
    assert quoted("a\nb  c") == "“a b c”"
    assert quoted("x" * 200, 10) == "“xxxxxxxxx…”"


def test_a_quote_that_ends_a_sentence_gets_no_second_full_stop() -> None:
    assert said(reason="superseded", other_id="m2", other_words="Moved to Lisbon.") == (
        "A newer memory replaced it: “Moved to Lisbon.”"
    )
    assert said(reason="rejected", decided_by="rhea", decided_at=WHEN, note="Why?").endswith(
        ": “Why?”"
    )
    assert said(reason="authored-wins", key="k", authored_value="Yes").endswith(": “Yes”.")
    assert said(reason="authored-wins", key="k").endswith("holds the same key and wins.")
