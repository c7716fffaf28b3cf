"""Template tags every list page shares."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString

register = template.Library()


@register.simple_tag(takes_context=True)
def filter_as_you_type(context: dict[str, Any], target: str) -> SafeString:
    """The htmx attributes of a list page's filter form: the one filter-as-you-type
    mechanism. Typing (debounced) or changing a field asks the page's own URL again;
    the view answers only the ``results`` partial (``web.pages.toolkit.render_list``), which
    replaces ``target``, and the address bar follows. Without JavaScript the form is an
    ordinary GET form.

    ``input`` covers every kind of field (a select or a checkbox fires it too), so there
    is no ``change`` trigger: ``change`` fires again when the box loses focus, which is
    exactly when a person clicks a result, and that second answer's history entry would
    cancel the link's navigation.
    """
    return format_html(
        'hx-get="{}" hx-trigger="input delay:250ms, search" hx-target="{}" '
        'hx-swap="outerHTML" hx-push-url="true"',
        context["request"].path,
        target,
    )
