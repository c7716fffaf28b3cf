"""A prompt's tokens against its model's context window, with this deployment's table
(``MODEL_CONTEXT_WINDOWS``: the defaults of ``lens.core.context_windows`` and the
operator's own)."""

from __future__ import annotations

from django.conf import settings

from lens.core.context_windows import ContextFigure, context_figure


def context_of(tokens: int, model: str | None) -> ContextFigure:
    """``tokens`` against the window of ``model`` (None: no model named)."""
    windows: dict[str, int] = settings.MODEL_CONTEXT_WINDOWS
    return context_figure(tokens, model, windows)
