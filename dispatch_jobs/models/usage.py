"""Per-attempt measurements: the seed's ``Usage``."""

from __future__ import annotations

from django.db import models
from django.db.models.functions import Now

from ..limits import QUEUE_MAX
from .jobs import JobState
from .stored_json import StoredJSONDecoder


class Usage(models.Model):
    """One attempt's measurements: the seed's ``Usage``."""

    id = models.BigAutoField(primary_key=True)
    job_id = models.BigIntegerField(db_index=True)
    name = models.CharField(max_length=255)
    queue = models.CharField(max_length=QUEUE_MAX)
    attempt = models.IntegerField()
    status = models.CharField(max_length=16, choices=JobState.choices)
    input_bytes = models.BigIntegerField(default=0)
    resources = models.JSONField(decoder=StoredJSONDecoder, default=dict, blank=True)
    wall_time = models.DurationField()
    cpu_time = models.DurationField(null=True, blank=True)
    peak_rss = models.BigIntegerField(default=0)
    disk_written = models.BigIntegerField(default=0)
    executor = models.CharField(max_length=32, blank=True, default="")
    scope_app_id = models.CharField(max_length=100, blank=True, default="")
    scope_org_id = models.CharField(max_length=100, blank=True, default="")
    worker_id = models.CharField(max_length=100, blank=True, default="")
    recorded_at = models.DateTimeField(db_default=Now())

    class Meta:
        ordering = ["-recorded_at", "-id"]
        verbose_name_plural = "usage"
        indexes = [
            models.Index(fields=["name", "-recorded_at"], name="dj_usage_name_time"),
            models.Index(fields=["-recorded_at"], name="dj_usage_time"),
        ]

    def __str__(self) -> str:
        return f"{self.name} #{self.job_id} attempt {self.attempt}"
