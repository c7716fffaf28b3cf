"""The lens at a moment: the link each delivery and revision gives to the lens as the
agent stood then (SPEC §14 "As of")."""

from __future__ import annotations

from datetime import UTC, datetime

from django import template
from django.urls import reverse
from django.utils.http import urlencode

register = template.Library()


@register.simple_tag
def lens_at(slug: str, moment: datetime) -> str:
    """``/agents/<slug>/?as_of=<moment>``: the moment in UTC to the microsecond, so the
    lens composes exactly what was in force then (a delivery's own prompt)."""
    at = moment.astimezone(UTC).isoformat()
    return f"{reverse('agent-lens', args=[slug])}?{urlencode({'as_of': at})}"
