from __future__ import annotations

from django.apps import AppConfig


class WebConfig(AppConfig):
    """The outer layer as an app of its own, so Django finds its admin module, template
    tags and management commands here; it has no models."""

    name = "web"
    label = "web"
