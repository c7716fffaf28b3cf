"""A prompt's size against its model's context window: which window a model name has,
how much of it a prompt takes, and when that deserves a warning. Pure.

A context window is a property of the model, not of the prompt, so it lives in a table
keyed by model name: ``DEFAULT_WINDOWS`` below, which an operator extends or overrides
with ``MODEL_CONTEXT_WINDOWS`` (``parse_windows``). A name is looked up case-folded: an
exact key first, then the longest key the name starts with, so a dated snapshot
(``gpt-4o-2024-08-06``) finds its family (``gpt-4o``) and ``gpt-4o-mini`` is not taken
for ``gpt-4o``. Names a provider prefixes (``openai/gpt-4o``, ``models/gemini-1.5-pro``,
an OpenAI fine-tune ``ft:gpt-4o-…``) are also tried without the prefix. A name nothing
matches has no known window: no figure, no warning, and the pages say how to add one.

The figures are the providers' published input limits, rounded down where a family's
members differ, since a warning that comes early costs less than one that never comes:
a larger window in beta (Claude's 1M) is left out, as are models whose figure could not
be checked.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

MODEL_MAX = 128  # code points, as a delivery's ``model`` (SPEC §11)
# A model id as providers spell them: letters, digits and the punctuation their ids use
# (``gpt-4o-2024-08-06``, ``claude-3-5-sonnet@20240620``, ``llama3.1:70b``,
# ``meta-llama/Llama-3.1-8B-Instruct``, ``ft:gpt-4o:acme::9aBc``). No spaces: it is a
# name a runtime passes to an API, shown in code on the pages.
_MODEL_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@+-]*")
MODEL_RULE = (
    "1 to 128 characters: letters, digits and . _ : / @ + - (starting with a letter or digit)"
)
# An operator's window beyond this is a typo (an extra zero or two), not a model.
WINDOW_MAX = 100_000_000
# The shares at which a prompt is worth a second look, and an alarm, in percent.
WARNING_PERCENT = 50
ALARM_PERCENT = 90

_K128 = 128_000
_K200 = 200_000
_M1 = 1_048_576  # Google's "1M": 2**20
DEFAULT_WINDOWS: Mapping[str, int] = MappingProxyType(
    {
        # OpenAI
        "gpt-4o": _K128,
        "gpt-4o-mini": _K128,
        "gpt-4-turbo": _K128,
        "gpt-4.1": 1_047_576,  # gpt-4.1, -mini and -nano alike
        "o3": _K200,
        "o3-mini": _K200,
        "o4-mini": _K200,
        "gpt-5": 400_000,  # gpt-5, -mini and -nano alike
        # Anthropic (the 1M window of some is a beta, left out)
        "claude-3": _K200,  # 3, 3.5 and 3.7 (claude-3-5-sonnet-…, claude-3.7-sonnet)
        "claude-sonnet-4": _K200,
        "claude-opus-4": _K200,
        "claude-haiku-4": _K200,
        # Google
        "gemini-1.5-pro": 2_097_152,
        "gemini-1.5-flash": _M1,
        "gemini-2.0-flash": _M1,
        "gemini-2.5-pro": _M1,
        "gemini-2.5-flash": _M1,
        # Meta Llama 3.1 and later (128K; some hosts serve less: override them)
        "llama-3.1": _K128,
        "llama-3.2": _K128,
        "llama-3.3": _K128,
        "llama3.1": _K128,
        "llama3.2": _K128,
        "llama3.3": _K128,
        "meta-llama-3.1": _K128,
        # Mistral
        "mistral-large": _K128,
    }
)

Level = Literal["none", "unknown", "ok", "warning", "alarm"]


def model_problem(name: str) -> str | None:
    """Why ``name`` cannot be a model name, or None. Shared with the admin."""
    if not 1 <= len(name) <= MODEL_MAX or _MODEL_RE.fullmatch(name) is None:
        shown = name if len(name) <= 40 else name[:40] + "…"
        return f"model {shown!r} is not a model name: {MODEL_RULE}"
    return None


def parse_windows(text: str) -> dict[str, int]:
    """``name=tokens`` items separated by commas (``"my-model=32000, other=128000"``)
    as a table of windows, names case-folded. Blank items are skipped.

    Raises ValueError naming the first item that is not a model name, a window of 1 to
    ``WINDOW_MAX`` tokens written in digits, or a name given twice.
    """
    found: dict[str, int] = {}
    for number, raw in enumerate(text.split(","), start=1):
        item = raw.strip()
        if not item:
            continue
        name, equals, size = (part.strip() for part in item.partition("="))
        if not equals:
            raise ValueError(f"item {number} ({item!r}) is not name=tokens, e.g. my-model=32000")
        if problem := model_problem(name):
            raise ValueError(f"item {number}: {problem}")
        if not size.isascii() or not size.isdigit() or not 1 <= int(size) <= WINDOW_MAX:
            raise ValueError(
                f"item {number} ({item!r}): the window must be a whole number of tokens "
                f"from 1 to {WINDOW_MAX:,}, in digits"
            )
        key = name.casefold()
        if key in found:
            raise ValueError(f"item {number}: model {name!r} is given twice")
        found[key] = int(size)
    return found


def merged_windows(overrides: Mapping[str, int]) -> dict[str, int]:
    """The default table with an operator's entries added (or replacing the same name)."""
    return {**DEFAULT_WINDOWS, **overrides}


def _names(model: str) -> list[str]:
    """The spellings of ``model`` to look up, most specific first: as given, then
    without an OpenAI fine-tune's ``ft:`` and without a provider's path."""
    folded = model.casefold()
    bare = folded.removeprefix("ft:").rsplit("/", 1)[-1]
    return [folded] if bare == folded or not bare else [folded, bare]


def window_for(model: str, windows: Mapping[str, int]) -> int | None:
    """The context window of ``model`` in ``windows`` (keys case-folded): an exact key,
    else the longest key a spelling of it starts with; None when nothing matches."""
    names = _names(model)
    for name in names:
        if name in windows:
            return windows[name]
    best = ""
    for key in windows:
        if len(key) > len(best) and any(name.startswith(key) for name in names):
            best = key
    return windows[best] if best else None


@dataclass(frozen=True)
class ContextFigure:
    """``tokens`` of a prompt against the window of ``model`` (None: no model named;
    ``window`` None: its window is not known)."""

    tokens: int
    model: str | None
    window: int | None

    @property
    def level(self) -> Level:
        if self.model is None:
            return "none"
        if self.window is None:
            return "unknown"
        # Integers: exactly half is a warning, 89.99…% is not yet an alarm.
        if self.tokens * 100 >= ALARM_PERCENT * self.window:
            return "alarm"
        if self.tokens * 100 >= WARNING_PERCENT * self.window:
            return "warning"
        return "ok"

    @property
    def share(self) -> float | None:
        """The fraction of the window the prompt takes (above 1 when it does not fit)."""
        return None if self.window is None else self.tokens / self.window

    @property
    def over(self) -> bool:
        return self.window is not None and self.tokens > self.window

    @property
    def tokens_label(self) -> str:
        return f"{self.tokens:,}"

    @property
    def window_label(self) -> str:
        return "" if self.window is None else f"{self.window:,}"

    @property
    def meter_low(self) -> int | None:
        """The smallest token count that is a warning: an HTML meter's ``low`` (values
        under it are the low region), so the meter turns exactly where the words do."""
        return None if self.window is None else -(-self.window * WARNING_PERCENT // 100)

    @property
    def meter_high(self) -> int | None:
        """The largest token count that is not yet an alarm: the meter's ``high`` (values
        above it are the high region)."""
        return None if self.window is None else -(-self.window * ALARM_PERCENT // 100) - 1

    @property
    def percent(self) -> str:
        """The share in whole percent, as the pages show it ("11%"), never crossing a
        threshold the prompt has not reached: 89.6% reads "89.6%", not "90%"; a share
        under 1% reads "<1%", not "0%"."""
        if self.window is None:
            return ""
        tokens, window = self.tokens, self.window
        whole = (tokens * 200 + window) // (window * 2)  # half up, in integers
        crossed = any(
            whole >= limit and tokens * 100 < limit * window
            for limit in (WARNING_PERCENT, ALARM_PERCENT, 100)
        )
        if crossed:
            tenths = tokens * 1000 // window  # truncated: stays under the threshold
            return f"{tenths // 10}.{tenths % 10}%"
        if whole == 0 and tokens > 0:
            return "<1%"
        return f"{whole:,}%"

    def as_json(self) -> dict[str, Any]:
        """The composition answer's ``context`` (SPEC §4.5's tokens against a window)."""
        return {
            "model": self.model,
            "window": self.window,
            "share": self.share,
            "level": None if self.level in ("none", "unknown") else self.level,
        }


def context_figure(tokens: int, model: str | None, windows: Mapping[str, int]) -> ContextFigure:
    window = None if model is None else window_for(model, windows)
    return ContextFigure(tokens=tokens, model=model, window=window)
