"""Routing specs are code, registered by import path in ``MEMORY_ROUTING_SPECS``."""

from __future__ import annotations

from functools import cache

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

from lens.core.errors import DomainError
from memory.core.presets import Preset
from memory.core.routing import RoutingSpec


class UnknownRoutingSpec(DomainError):
    code = "unknown_routing_spec"


@cache
def _specs(paths: tuple[str, ...]) -> dict[str, RoutingSpec]:
    specs: dict[str, RoutingSpec] = {}
    for path in paths:
        spec = import_string(path)
        if not isinstance(spec, RoutingSpec):
            raise ImproperlyConfigured(f"{path} is not a routing spec (needs key, version, route)")
        if spec.key in specs:
            raise ImproperlyConfigured(f"two routing specs are registered as {spec.key!r}")
        specs[spec.key] = spec
    return specs


def specs() -> dict[str, RoutingSpec]:
    return _specs(tuple(settings.MEMORY_ROUTING_SPECS))


def known_spec_keys() -> frozenset[str]:
    return frozenset(specs())


def get_spec(key: str | None) -> RoutingSpec | None:
    """The registered spec named ``key``; None for no key or one no longer registered."""
    return specs().get(key) if key else None


def check_spec_key(key: str | None) -> str | None:
    """``key`` when it names a registered spec (or is None); else UnknownRoutingSpec."""
    if key is not None and key not in specs():
        known = sorted(specs())
        raise UnknownRoutingSpec(
            f"Unknown routing spec {key!r} (known: {', '.join(known) or 'none configured'}).",
            known=known,
        )
    return key


def preset_specs() -> list[Preset]:
    """Registered specs that come with the section declarations they expect."""
    return [spec for spec in specs().values() if isinstance(spec, Preset)]
