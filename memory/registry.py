"""Routing specs are code, registered by import path in ``MEMORY_ROUTING_SPECS``."""

from __future__ import annotations

from functools import cache
from typing import Any

from django.conf import settings
from django.utils.module_loading import import_string


@cache
def _specs(paths: tuple[str, ...]) -> dict[str, Any]:
    specs: dict[str, Any] = {}
    for path in paths:
        spec = import_string(path)
        specs[spec.key] = spec
    return specs


def specs() -> dict[str, Any]:
    return _specs(tuple(settings.MEMORY_ROUTING_SPECS))


def known_spec_keys() -> frozenset[str]:
    return frozenset(specs())
