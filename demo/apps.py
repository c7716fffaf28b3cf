from __future__ import annotations

from django.apps import AppConfig


class DemoConfig(AppConfig):
    """An app of its own so Django finds ``seed_demo``; it has no models, and nothing in
    the product imports it."""

    name = "demo"
    label = "demo"
