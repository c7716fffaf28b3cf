"""The admin's "Preview the effect" step (SPEC §18.2): what a change of an agent's
declarations would do, shown before it is saved.

The admin's own forms and inlines are the only reader of what was typed, so the preview
lets them save as usual, inside the admin's transaction, reads the config the rows now
give, and then raises: the transaction rolls back whole (no row, revision, proposal,
audit line or log entry survives, and hooks waiting for the commit are dropped). The
config is then asked about with ``memory.what_if`` against the agent as it still is.

The preview page carries what was posted as hidden fields, so "Save this change" posts
the same form again, through the same validation, without the preview step. Saving
without previewing stays possible: the step is a button beside Save.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from lens.agents import config_of, with_config
from lens.core.config import AgentConfig
from lens.models import Agent
from memory.core.what_if import ConfigChange, effect_phrases, fate_words
from memory.what_if import LAST_DEFAULT, what_if

PREVIEW_FIELD = "_preview"
# Memories listed by name; a change that moves more says how many more.
FATES_SHOWN = 50
# Posted again on the preview page: what the admin's forms read, without the buttons.
_BUTTONS = frozenset({PREVIEW_FIELD, "_save", "_continue", "_addanother", "_saveasnew"})


class Previewed(Exception):  # noqa: N818  (a way out of the transaction, not an error)
    """Raised once the forms are saved, so the admin's transaction rolls back."""

    def __init__(self, agent: Agent, config: AgentConfig) -> None:
        super().__init__("previewed")
        self.agent = agent
        self.config = config


def wants_preview(request: HttpRequest) -> bool:
    return request.method == "POST" and PREVIEW_FIELD in request.POST


def previewed(agent: Agent) -> Previewed:
    """What to raise once the forms saved ``agent``'s rows: the config they give now."""
    fresh = with_config(Agent.objects.filter(pk=agent.pk)).get()
    return Previewed(fresh, config_of(fresh))


def hidden_fields(request: HttpRequest) -> list[tuple[str, str]]:
    """Every posted value but the buttons and the CSRF token (the page adds its own),
    in the order posted, repeated names kept."""
    return [
        (name, value)
        for name, values in request.POST.lists()
        if name not in _BUTTONS and name != "csrfmiddlewaretoken"
        for value in values
    ]


def preview_response(
    request: HttpRequest, found: Previewed, context: dict[str, Any]
) -> HttpResponse:
    """The preview page: the change's effect now and over the last deliveries, and the
    same form ready to save."""
    agent = Agent.objects.filter(pk=found.agent.pk).select_related("team")
    current = with_config(agent).get()
    effect = what_if(current, ConfigChange(found.config), LAST_DEFAULT)
    fates = effect.now.memories
    return TemplateResponse(
        request,
        "admin/lens/effect_preview.html",
        {
            **context,
            "title": f"The effect of this change on {current.name}",
            "agent": current,
            "effect": effect,
            "phrases": effect_phrases(effect),
            "fates": [fate_words(fate) for fate in fates[:FATES_SHOWN]],
            "fates_more": max(0, len(fates) - FATES_SHOWN),
            "fields": hidden_fields(request),
            "protected": current.protected,
        },
    )
