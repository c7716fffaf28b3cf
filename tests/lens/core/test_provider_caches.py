"""What each provider's rule serves from its cache of a shared prefix (SPEC §17)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lens.core.provider_caches import (
    ANTHROPIC_MINIMUM,
    OPENAI_MINIMUM,
    OPENAI_STEP,
    anthropic_cached,
    openai_cached,
)


@pytest.mark.parametrize(
    ("prefix", "billed"), [(0, 0), (1023, 0), (1024, 1024), (1151, 1024), (1152, 1152)]
)
def test_openai_bills_prefixes_of_1024_tokens_or_more_in_steps_of_128(
    prefix: int, billed: int
) -> None:
    assert openai_cached(prefix) == billed


@given(st.integers(0, 10**7))
def test_openai_never_bills_more_than_the_prefix_nor_off_its_steps(prefix: int) -> None:
    billed = openai_cached(prefix)
    assert 0 <= billed <= prefix
    assert billed == 0 or (billed >= OPENAI_MINIMUM and billed % OPENAI_STEP == 0)
    assert prefix - billed < (OPENAI_STEP if prefix >= OPENAI_MINIMUM else OPENAI_MINIMUM)


@pytest.mark.parametrize(
    ("prefix", "breakpoints", "served"),
    [
        (5000, (2000, 9000), 2000),  # changed after the authored sections
        (9000, (2000, 9000), 9000),  # unchanged: the whole prompt
        (1999, (2000, 9000), 0),  # changed inside the authored sections
        (5000, (800, 9000), 0),  # the breakpoint it reaches is under the minimum
        (9000, (800, 9000), 9000),
        (0, (), 0),
    ],
)
def test_anthropic_serves_up_to_the_furthest_breakpoint_reached(
    prefix: int, breakpoints: tuple[int, ...], served: int
) -> None:
    assert anthropic_cached(prefix, breakpoints) == served


@given(st.integers(0, 10**6), st.lists(st.integers(0, 10**6), max_size=4))
def test_anthropic_serves_a_reached_breakpoint_or_nothing(
    prefix: int, breakpoints: list[int]
) -> None:
    served = anthropic_cached(prefix, breakpoints)
    assert served == 0 or (served in breakpoints and ANTHROPIC_MINIMUM <= served <= prefix)
    assert served <= anthropic_cached(prefix + 1, breakpoints)
