"""The versioned key/value store: one row per key, one row per version."""

from __future__ import annotations

from django.db import models

from lens.models import Team


class Key(models.Model):
    """A key and its latest version: the index row that makes listings cheap."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="kv_keys")
    key = models.CharField(max_length=256)
    latest_version = models.PositiveIntegerField()
    latest_written_at = models.DateTimeField()
    latest_runes = models.PositiveIntegerField()
    created_at = models.DateTimeField()

    class Meta:
        db_table = "kvstore_key"
        constraints = [models.UniqueConstraint(fields=["team", "key"], name="kv_unique_key")]

    def __str__(self) -> str:
        return self.key


class Version(models.Model):
    key = models.ForeignKey(Key, on_delete=models.CASCADE, related_name="versions")
    version = models.PositiveIntegerField()
    payload = models.TextField()
    runes = models.PositiveIntegerField()
    # Kept beside the payload so history never has to read payloads.
    first_line = models.CharField(max_length=120, blank=True)
    written_at = models.DateTimeField()

    class Meta:
        db_table = "kvstore_version"
        constraints = [models.UniqueConstraint(fields=["key", "version"], name="kv_unique_version")]

    def __str__(self) -> str:
        return f"{self.key_id}@{self.version}"
