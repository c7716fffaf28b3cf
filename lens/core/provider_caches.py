"""What a provider would serve from its prompt cache, given how many leading tokens a
prompt shares with the one before (SPEC §17). Pure.

The shared prefix is the most any provider can reuse; each one's rule decides how much
of it it does:

- **OpenAI** caches automatically, prompts of at least 1,024 tokens, in steps of 128
  beyond that: a shared prefix of 1,500 tokens is billed as 1,408 cached.
- **Anthropic** caches only up to the breakpoints a request marks (``cache_control``,
  at most four), and only a prefix of at least 1,024 tokens (Claude Sonnet and Opus;
  2,048 or more for some Haiku models, so the figure is an upper bound for those). A
  breakpoint the shared prefix does not reach serves nothing past the one before it.
  The figures here assume the two breakpoints a system prompt composed like ours would
  mark: after the authored sections (which change only with a revision) and at the end.
"""

from __future__ import annotations

from collections.abc import Iterable

OPENAI_MINIMUM = 1024
OPENAI_STEP = 128
ANTHROPIC_MINIMUM = 1024


def openai_cached(prefix_tokens: int) -> int:
    """The tokens OpenAI would bill as cached of a shared prefix this long."""
    if prefix_tokens < OPENAI_MINIMUM:
        return 0
    return prefix_tokens - (prefix_tokens - OPENAI_MINIMUM) % OPENAI_STEP


def anthropic_cached(prefix_tokens: int, breakpoints: Iterable[int]) -> int:
    """The tokens Anthropic would serve from its cache: the furthest breakpoint (a token
    offset) that the shared prefix reaches, when that is at least the minimum."""
    reached = max((point for point in breakpoints if point <= prefix_tokens), default=0)
    return reached if reached >= ANTHROPIC_MINIMUM else 0
