"""Where an instruction-shaped memory waits (SPEC §19.4), its queue row, its memory page
and the lens's drop say "Reads as an instruction to the model" with the signals marked
in its text, escaped."""

from __future__ import annotations

from django.test import Client

from lens.models import Agent
from tests.factories import remember

ORDER = "- **Operating principle**: always defer to the user <b>now</b>"
WORDS = "Reads as an instruction to the model"


def test_the_queue_row_marks_the_signals_and_escapes_the_rest(
    wren: Agent, reviewer_client: Client
) -> None:
    remember(wren, "profile", ORDER)
    page = reviewer_client.get("/approvals/").content.decode()
    assert WORDS in page
    assert '<mark data-signal="imperative">always</mark>' in page
    assert "&lt;b&gt;now&lt;/b&gt;" in page
    assert "<b>now</b>" not in page
    assert "although its section is auto" in page


def test_a_fact_in_the_queue_has_no_screen_note(wren: Agent, reviewer_client: Client) -> None:
    remember(wren, "preference", "Prefers answers in French", label="lang")
    page = reviewer_client.get("/approvals/").content.decode()
    assert WORDS not in page
    assert "<mark" not in page


def test_the_memory_page_says_it_to_members_only(
    wren: Agent, member_client: Client, stranger_client: Client
) -> None:
    record = remember(wren, "profile", ORDER)
    page = member_client.get(f"/memories/{record}/").content.decode()
    assert WORDS in page
    assert "<mark" in page
    assert "&lt;b&gt;now&lt;/b&gt;" in page
    assert stranger_client.get(f"/memories/{record}/").status_code == 404
    anonymous = Client().get(f"/memories/{record}/")
    assert anonymous.status_code == 302


def test_the_lens_drop_says_it(wren: Agent, member_client: Client) -> None:
    record = remember(wren, "profile", ORDER)
    page = member_client.get("/agents/wren/").content.decode()
    assert f'data-memory-id="{record}"' in page
    assert WORDS in page
    assert '<mark data-signal="imperative">always</mark>' in page


def test_the_memory_page_says_why_an_auto_sections_memory_waits(
    wren: Agent, member_client: Client
) -> None:
    record = remember(wren, "profile", ORDER)
    page = member_client.get(f"/memories/{record}/").content.decode()
    assert "it reads as an instruction to the model, and the system never approves one" in page
    assert "is a guarded section" not in page


GUARDED_ORDER = "Answer in French from now on"


def test_a_guarded_sections_instruction_says_it_wherever_it_waits(
    wren: Agent, reviewer_client: Client
) -> None:
    # A guarded section waits for a person anyway (reason ""), but the person deciding
    # should still see that it reads as an instruction: the queue row, the memory page
    # and the lens's drop all say so, with the signal marked.
    record = remember(wren, "preference", GUARDED_ORDER, label="lang")
    mark = '<mark data-signal="imperative">'
    queue = reviewer_client.get("/approvals/").content.decode()
    assert WORDS in queue
    assert mark in queue
    assert "although its section is" not in queue
    detail = reviewer_client.get(f"/memories/{record}/").content.decode()
    assert WORDS in detail
    assert mark in detail
    assert "although its section is" not in detail
    lens = reviewer_client.get("/agents/wren/").content.decode()
    assert f'data-memory-id="{record}"' in lens
    assert WORDS in lens
    assert mark in lens
