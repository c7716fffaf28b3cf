from __future__ import annotations

from django.apps import AppConfig


class LensConfig(AppConfig):
    name = "lens"
    verbose_name = "Composition Lens"
