"""What a queue row says approving would do (``memory.core.impact``, then the page): the
budget it needs and what is left, the memories it would push out, the section's lines
once approved — all as the real fold says, so the preview matches what approving then
composes.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from hypothesis import given, settings
from hypothesis import strategies as st

from lens.actors import Actor
from lens.core.render import entry_line
from lens.models import Agent
from memory.core.impact import PREVIEW_LINE_MAX, PREVIEW_WHOLE_UP_TO, Baseline, Gap, PreviewLine
from memory.decisions import decide
from tests.factories import HTMX, composed, post_decision, preference, remember
from tests.pages import Element, approval_queue, fragment, queue_rows, with_class
from tests.samples import ReconcileSpec, RenderSpec, background, line_cost, placed, section

# --- the pure core ------------------------------------------------------------------------

NOTES = background(section("notes", "auto", ("rule", "Be kind.")))


def test_a_candidate_that_fits_is_composed_and_previewed_in_its_place() -> None:
    older, newer = placed("m1", seconds=1), placed("m3", seconds=3)
    candidate = placed("m2", seconds=2)
    base = Baseline.of(NOTES, [older, newer], None, 1000)
    impact = base.impact(candidate)
    assert (impact.reason, impact.effect, impact.pushed_out) == (None, "fits", ())
    assert impact.needed == line_cost("m2", "content of m2")
    assert impact.left == 1000 - line_cost("m1", "content of m1") - line_cost("m3", "content of m3")
    assert impact.lines == (
        PreviewLine("- **rule**: Be kind.", "authored"),
        PreviewLine("- **m1**: content of m1", "memory", "m1"),
        PreviewLine("- **m2**: content of m2", "new", "m2"),
        PreviewLine("- **m3**: content of m3", "memory", "m3"),
    )
    assert impact.line_count == 4
    assert (impact.section_title, impact.tier) == ("Notes", "auto")


def test_withdrawing_a_memory_shows_its_line_leaving_and_what_the_freed_budget_brings_back() -> (
    None
):
    first, second = placed("m1", seconds=1), placed("m2", seconds=2)
    cost = line_cost("m1", "content of m1")
    base = Baseline.of(NOTES, [first, second], None, cost)  # room for the newer only
    gone = base.withdrawal("m2")
    assert (gone.composed, gone.leaving, gone.takes_place) == (
        True,
        "- **m2**: content of m2",
        (),
    )
    assert [p.id for p in gone.brought_in] == ["m1"]
    assert gone.freed == cost
    assert gone.lines == (
        PreviewLine("- **rule**: Be kind.", "authored"),
        PreviewLine("- **m1**: content of m1", "new", "m1"),
        PreviewLine("- **m2**: content of m2", "leaves", "m2"),
    )
    assert gone.line_count == 2
    assert gone.sentences()[0] == "Its line leaves Notes: “- **m2**: content of m2”"
    assert gone.sentences()[1] == "Nothing takes its place at “m2”."
    assert gone.sentences()[2] == (
        f"The {cost} characters it frees let “content of m1” back in (they were over the "
        "memory budget)."
    )
    # A memory not in the prompt: nothing changes, and it says so.
    assert base.withdrawal("m1").sentences() == [
        "It is not in the prompt now, so the prompt does not change."
    ]
    assert base.withdrawal("nope").composed is False


def test_a_newer_candidate_pushes_the_oldest_memory_out_when_the_budget_is_full() -> None:
    first, second = placed("m1", seconds=1), placed("m2", seconds=2)
    cost = line_cost("m1", "content of m1")
    base = Baseline.of(NOTES, [first, second], None, 2 * cost)
    impact = base.impact(placed("m3", seconds=3))
    assert (impact.reason, impact.effect, impact.left) == (None, "pushes", 0)
    assert [p.id for p in impact.pushed_out] == ["m1"]
    assert [
        (line.memory_id, line.state) for line in impact.lines if isinstance(line, PreviewLine)
    ] == [
        (None, "authored"),
        ("m1", "leaves"),
        ("m2", "memory"),
        ("m3", "new"),
    ]
    assert impact.line_count == 3


def test_an_older_candidate_that_does_not_fit_stays_out() -> None:
    first, second = placed("m2", seconds=2), placed("m3", seconds=3)
    cost = line_cost("m2", "content of m2")
    impact = Baseline.of(NOTES, [first, second], None, 2 * cost).impact(placed("m1", seconds=1))
    assert (impact.reason, impact.effect, impact.pushed_out) == ("over-budget", "over", ())
    assert [line.state for line in impact.lines if isinstance(line, PreviewLine)] == [
        "authored",
        "memory",
        "memory",
    ]


def test_an_authored_key_holds_and_a_locked_section_turns_away() -> None:
    config = background(section("notes", "auto", ("rule", "Be kind.")), section("vault", "locked"))
    base = Baseline.of(config, [], None, 1000)
    held = base.impact(placed("m1", key="rule"))
    assert (held.reason, held.effect) == ("authored-wins", "authored")
    assert held.lines == (PreviewLine("- **rule**: Be kind.", "holds"),)
    locked = base.impact(placed("m2", section="vault"))
    assert (locked.reason, locked.effect, locked.lines) == ("locked-section", "blocked", ())
    undeclared = base.impact(placed("m3", section="gone"))
    assert (undeclared.reason, undeclared.section, undeclared.lines) == (
        "undeclared-section",
        None,
        (),
    )


def test_a_long_entry_is_previewed_by_its_start_and_how_much_more_there_is() -> None:
    long_value = "word " * 2000  # a 10,000-character authored value
    base = Baseline.of(background(section("notes", "auto", ("rule", long_value))), [], None, 10**6)
    lines = [line for line in base.impact(placed("m1")).lines if isinstance(line, PreviewLine)]
    (line,) = [line for line in lines if line.state == "authored"]
    whole = entry_line_text("rule", long_value)
    assert (
        line.text
        == f"{whole[:PREVIEW_LINE_MAX]}… ({len(whole) - PREVIEW_LINE_MAX:,} more characters)"
    )


def entry_line_text(key: str, value: str) -> str:
    return f"- **{key}**: {value}"


def test_a_long_section_is_shown_around_what_changes() -> None:
    records = [placed(f"m{i:02}", seconds=i) for i in range(40)]
    impact = Baseline.of(NOTES, records, None, 100_000).impact(placed("new", seconds=20.5))
    lines = impact.lines
    assert impact.line_count == 42
    assert len(lines) < PREVIEW_WHOLE_UP_TO
    assert [type(item).__name__ for item in lines] == ["Gap"] + ["PreviewLine"] * 5 + ["Gap"]
    shown = [line for line in lines if isinstance(line, PreviewLine)]
    assert [line.memory_id for line in shown] == ["m19", "m20", "new", "m21", "m22"]
    gaps = [item.count for item in lines if isinstance(item, Gap)]
    assert sum(gaps) + len(shown) == 42


def test_records_out_for_other_reasons_do_not_change_the_answer() -> None:
    """The candidate's fold sees only the records that compete for the budget; leaving the
    others out must not change what it says (here: compare with a fold of everything)."""
    config = background(section("notes", "auto", ("rule", "x")), section("vault", "locked"))
    records = [placed(f"m{i}", seconds=i, content="y" * (i * 7 % 40)) for i in range(30)]
    records += [placed("held", key="rule"), placed("locked", section="vault")]
    base = Baseline.of(config, records, None, 400)
    everything = replace(base, holders=base.placed, contenders=base.placed)
    for seconds in (-1, 14.5, 99):
        candidate = placed("cand", seconds=seconds, content="z" * 25)
        assert base.impact(candidate) == everything.impact(candidate)


FOLD_CONFIG = background(
    section("a", "auto", ("k0", "authored")), section("b", "guarded"), section("c", "locked")
)
record_st = st.builds(
    lambda section_id, key, length, seconds: (section_id, key, length, seconds),
    st.sampled_from(["a", "b", "c", "gone"]),
    st.sampled_from([f"k{i}" for i in range(12)]),
    st.integers(0, 60),
    st.integers(0, 50),
)


@settings(max_examples=300, deadline=None)
@given(
    records=st.lists(record_st, max_size=25),
    candidate=record_st,
    budget=st.integers(0, 400),
    spec=st.sampled_from([None, ReconcileSpec(verdict=lambda a, b: "both"), RenderSpec()]),
)
def test_the_derived_answer_is_the_answer_of_a_fold_of_everything(
    records: list[tuple[str, str, int, int]],
    candidate: tuple[str, str, int, int],
    budget: int,
    spec: Any,
) -> None:
    """Whatever the records, the budget and the spec: what a row says approving does is
    what a fold of every approved record plus the candidate says."""
    approved = [
        placed(f"m{i:02}", section=s, key=k, content="v" * n, seconds=t)
        for i, (s, k, n, t) in enumerate(records)
    ]
    s, k, n, t = candidate
    pending = placed("zz", section=s, key=k, content="w" * n, seconds=t + 0.5)
    base = Baseline.of(FOLD_CONFIG, approved, spec, budget)
    everything = replace(base, holders=base.placed, contenders=base.placed)
    assert base.impact(pending) == everything.impact(pending)


# --- the page -----------------------------------------------------------------------------


def budget_of(row: Element) -> Element:
    (budget,) = [e for e in row.descendants() if "data-budget" in e.attrs]
    return budget


def preview_lines(row: Element) -> list[tuple[str, str]]:
    (preview,) = with_class(row, "queue-preview")
    return [
        (str(e.get("data-line")), with_class(e, "line-text")[0].squashed)
        for e in preview.descendants()
        if "data-line" in e.attrs
    ]


def fill(agent: Agent, reviewer: User, labels: list[str]) -> list[str]:
    """Approved preferences of equal length, oldest first."""
    ids = []
    for label in labels:
        record_id = preference(agent, f"Preference {label}.", label=label)
        decide(record_id, True, Actor.for_user(reviewer))
        ids.append(record_id)
    return ids


def test_a_row_that_fits_says_so_with_the_numbers(viewer_client: Client, wren: Agent) -> None:
    remember(wren, "profile", "Mira", label="name")  # composed: 15 chars
    record_id = preference(wren, "Prefers tea.", label="drink")
    budget = budget_of(queue_rows(approval_queue(viewer_client))[record_id])
    assert budget.get("data-budget") == "fits"
    needed = line_cost("drink", "Prefers tea.")
    left = 3000 - line_cost("name", "Mira")
    assert budget.squashed == (
        f"Fits the memory budget: its line takes {needed} chars; {left:,} of 3,000 are left."
    )


def test_a_row_that_pushes_memories_out_names_them_and_the_preview_matches_approving(
    reviewer_client: Client, wren: Agent, reviewer: User, settings: Any
) -> None:
    first, second = fill(wren, reviewer, ["aa", "bb"])
    budget = settings.MEMORY_OVERLAY_BUDGET_CHARS = 2 * line_cost("aa", "Preference aa.")
    record_id = preference(wren, "Preference cc.", label="cc")
    row = queue_rows(approval_queue(reviewer_client))[record_id]

    warning = budget_of(row)
    assert warning.get("data-budget") == "pushes"
    assert "Approving pushes 1 memory out of the prompt." in warning.squashed
    assert f"Its line takes {budget // 2} chars and 0 of {budget} are left" in warning.squashed
    pushed = [e for e in warning.descendants() if "data-pushed-out" in e.attrs]
    assert [(e.get("data-pushed-out"), e.get("href"), e.squashed) for e in pushed] == [
        (first, f"/memories/{first}/", "aa")
    ]
    lines = preview_lines(row)
    assert lines == [
        ("authored", "- **theme**: Light theme, large font."),
        ("leaves", "- **aa**: Preference aa."),
        ("memory", "- **bb**: Preference bb."),
        ("new", "- **cc**: Preference cc."),
    ]

    post_decision(reviewer_client, record_id, "approve")
    after = composed(wren).background
    (preferences,) = [s for s in after.sections if s.id == "user_preferences"]
    shown = [text for state, text in lines if state != "leaves"]
    assert [entry_line(e).rstrip("\n") for e in preferences.entries] == shown
    assert second in {i for e in preferences.entries for i in e.memory_ids}


def test_a_row_that_cannot_fit_warns_it_would_stay_out(
    viewer_client: Client, wren: Agent, settings: Any
) -> None:
    settings.MEMORY_OVERLAY_BUDGET_CHARS = 40
    record_id = preference(wren, "A very long preference " * 4, label="long")
    row = queue_rows(approval_queue(viewer_client))[record_id]
    budget = budget_of(row)
    assert budget.get("data-budget") == "over"
    assert "Would not fit the memory budget" in budget.squashed
    assert "only 40 of 40 are left" in budget.squashed
    assert [state for state, _text in preview_lines(row)] == ["authored"]


def test_a_row_at_an_authored_key_previews_the_entry_that_wins(
    viewer_client: Client, wren: Agent
) -> None:
    record_id = preference(wren, "Dark theme.", label="theme")
    row = queue_rows(approval_queue(viewer_client))[record_id]
    assert [e for e in row.descendants() if "data-budget" in e.attrs] == []
    assert preview_lines(row) == [("holds", "- **theme**: Light theme, large font.")]
    (summary,) = [e for e in row.descendants() if e.tag == "summary"]
    assert summary.squashed.startswith("“User Preferences” as it stays")


def test_a_row_that_supersedes_shows_the_replaced_memory_s_text(
    viewer_client: Client, wren: Agent, reviewer: User
) -> None:
    (older,) = fill(wren, reviewer, ["music"])
    newer = preference(wren, "Likes jazz and blues.", label="music", supersedes=older)
    (replaces,) = with_class(queue_rows(approval_queue(viewer_client))[newer], "queue-replaces")
    (link,) = [e for e in replaces.descendants() if e.get("data-replaced-memory")]
    assert link.get("href") == f"/memories/{older}/"
    assert link.squashed == "music: “Preference music.”"


@pytest.mark.parametrize("approved", [0, 30])
def test_the_query_count_does_not_grow_with_the_agent_s_memories(
    viewer_client: Client,
    wren: Agent,
    reviewer: User,
    approved: int,
    django_assert_max_num_queries: Any,
) -> None:
    fill(wren, reviewer, [f"p{i}" for i in range(approved)])
    for i in range(5):
        preference(wren, f"Waiting {i}.", label=f"w{i}")
    viewer_client.get("/approvals/")
    with django_assert_max_num_queries(16):
        assert viewer_client.get("/approvals/").status_code == 200


# --- refreshing after a decision ----------------------------------------------------------


def test_the_impacts_endpoint_answers_fresh_notes_out_of_band(
    reviewer_client: Client, wren: Agent, reviewer: User, settings: Any
) -> None:
    settings.MEMORY_OVERLAY_BUDGET_CHARS = line_cost("aa", "Preference aa.") * 3 // 2
    first = preference(wren, "Preference aa.", label="aa")
    second = preference(wren, "Preference bb.", label="bb")
    rows = queue_rows(approval_queue(reviewer_client))
    assert budget_of(rows[second]).get("data-budget") == "fits"

    post_decision(reviewer_client, first, "approve")
    response = reviewer_client.get(
        f"/approvals/impacts/?ids={first},{second},nonsense&open={second}", headers=HTMX
    )
    page = fragment(response)
    (block,) = page.all("hx-swap-oob")
    assert (block.get("id"), block.get("hx-swap-oob")) == (f"impact-{second}", "true")
    assert budget_of(block).get("data-budget") == "pushes"
    (details,) = [e for e in block.descendants() if e.tag == "details"]
    assert "open" in details.attrs


def test_the_impacts_endpoint_is_the_team_s_only(
    stranger_client: Client, wren: Agent, viewer_client: Client
) -> None:
    record_id = preference(wren, "Preference aa.", label="aa")
    path = f"/approvals/impacts/?ids={record_id}"
    assert fragment(stranger_client.get(path)).all("hx-swap-oob") == []
    assert len(fragment(viewer_client.get(path)).all("hx-swap-oob")) == 1
    response = Client().get(path)
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")
    assert viewer_client.post(path).status_code == 405
