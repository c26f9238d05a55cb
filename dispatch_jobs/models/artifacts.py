"""Artifacts: content-addressed bytes jobs take as inputs."""

from __future__ import annotations

from django.db import models
from django.db.models.functions import Now


class Artifact(models.Model):
    """Bytes a job takes as a declared input (docs/how-to/inputs.md): where they live
    (a Django ``STORAGES`` alias and the name within it) and what they are (their
    sha256, size and media type). Content-addressed: the stored name is derived
    from the hash, so registering the same bytes twice stores them once.

    Written only by ``store.record_artifact`` (through ``dispatch_jobs.artifacts.register``).
    """

    id = models.BigAutoField(primary_key=True)
    content_hash = models.CharField(max_length=64, db_index=True, help_text="sha256, hex.")
    size = models.BigIntegerField(help_text="bytes")
    media_type = models.CharField(max_length=255, default="application/octet-stream")
    storage = models.CharField(max_length=100, default="default", help_text="STORAGES alias.")
    path = models.CharField(max_length=500, help_text="The name within the storage.")
    created_at = models.DateTimeField(db_default=Now())

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"{self.content_hash[:12]} ({self.size} bytes, {self.media_type})"
