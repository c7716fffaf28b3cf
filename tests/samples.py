"""Pure sample data shared by tests (no Django, so core tests can use it too)."""

from __future__ import annotations

from typing import Any

# Every line break SPEC §4.2 lists: \n, \r, \r\n, \v, \f, \x1c–\x1e, \x85, \u2028, \u2029.
SPEC_LINE_BREAKS = [
    "\n",
    "\r",
    "\r\n",
    "\v",
    "\f",
    "\x1c",
    "\x1d",
    "\x1e",
    "\x85",
    "\u2028",
    "\u2029",
]

SAMPLE_CONFIG: dict[str, Any] = {
    "name": "Wren",
    "persona": "You are Wren, a companion.",
    "tone": "Warm.",
    "objective": "Help the user.",
    "capabilities": [{"name": "memory_save", "description": "Save what you learn."}],
    "manual": "Save profile memories with a label.",
    "routing_spec": None,
    "background": {
        "sections": [
            {"id": "user_profile", "title": "About the User", "promotion": "auto"},
            {
                "id": "ground_rules",
                "title": "Ground Rules",
                "promotion": "locked",
                "entries": [
                    {"key": "privacy", "value": "Never share what the user says."},
                    {"key": "check_in_hour", "value": 9},
                    {"key": "ratio", "value": 2.5},
                    {"key": "proactive", "value": True},
                ],
            },
        ]
    },
    "awareness": [{"name": "Calendar", "description": "Next 14 days", "access_method": "tool"}],
    "recall_pinned_candidates": False,
}
