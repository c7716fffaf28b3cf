from __future__ import annotations

from django.apps import AppConfig


class KvstoreConfig(AppConfig):
    name = "kvstore"
    verbose_name = "Key/value store"
