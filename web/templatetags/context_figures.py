"""``{% context_window %}``: a prompt's tokens against its model's context window, the
one markup the lens, a delivery's page and the timeline's rows share
(``templates/lens/_context_window.html``)."""

from __future__ import annotations

from typing import Any

from django import template

from lens.context_windows import context_of

register = template.Library()


@register.inclusion_tag("lens/_context_window.html")
def context_window(
    tokens: int,
    model: str | None,
    declared: str | None = None,
    *,
    compact: bool = False,
    meter: bool = False,
) -> dict[str, Any]:
    """``tokens`` against the window of ``model``; a delivery that named no model is
    measured against its agent's ``declared`` one, and says so. ``compact``: one short
    line (a timeline cell); ``meter``: with a meter (the lens)."""
    named = model or None
    return {
        "figure": context_of(tokens, named or declared or None),
        "from_declared": named is None and bool(declared),
        "compact": compact,
        "meter": meter,
    }
