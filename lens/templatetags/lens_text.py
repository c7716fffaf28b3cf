"""Template filters for showing prompt text exactly."""

from __future__ import annotations

from django import template
from django.utils.html import conditional_escape
from django.utils.safestring import SafeString, mark_safe

register = template.Library()


@register.filter
def exact_text(value: str) -> SafeString:
    """HTML-escape ``value`` so that the element's ``textContent`` is exactly ``value``.

    HTML parsing turns every raw CR (and CRLF) into LF before it reads the markup, so a
    prompt with CRLF line endings (which admin textareas submit) would reach the reader
    and the "Copy prompt" button altered; a character reference survives that step.
    """
    # One pass; format_html_join over the lines measured ~100 times slower on CRLF text.
    return mark_safe(str(conditional_escape(value)).replace("\r", "&#13;"))  # noqa: S308  # escaped first
