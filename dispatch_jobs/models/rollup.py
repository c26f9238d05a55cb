"""The dashboard's rollup: finished jobs per task and minute, and its watermark."""

from __future__ import annotations

from django.db import models
from django.db.models.functions import Now

from ..limits import QUEUE_MAX


class TaskMinute(models.Model):
    """Finished jobs of one task on one queue in one minute: the rollup the
    dashboard reads, so its cost follows tasks x minutes, not the jobs table.

    Written only by ``store.roll_up_finished_jobs`` (a maintenance runner). A
    job counts in the minute of its ``completed_at``; run times are its last
    attempt's (``completed_at - started_at``), in milliseconds.
    """

    id = models.BigAutoField(primary_key=True)
    minute = models.DateTimeField(help_text="The bucket's start (UTC, whole minute).")
    name = models.CharField(max_length=255)
    queue = models.CharField(max_length=QUEUE_MAX)
    completed = models.IntegerField(default=0)
    failed = models.IntegerField(default=0)
    cancelled = models.IntegerField(default=0)
    retried = models.IntegerField(default=0, help_text="Retries the finished jobs went through.")
    run_ms_total = models.BigIntegerField(default=0)
    run_ms_max = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            # One row per bucket; its leading column serves the dashboard's time ranges.
            models.UniqueConstraint(fields=["minute", "name", "queue"], name="dj_taskminute_key")
        ]

    def __str__(self) -> str:
        return f"{self.name} on {self.queue} at {self.minute:%Y-%m-%d %H:%M}"


class RollupMark(models.Model):
    """How far a rollup has read the jobs table: the last (completed_at, id)
    it counted. Its row lock serialises rollup runs, so two maintenance
    leaders racing never count a job twice."""

    name = models.CharField(max_length=100, primary_key=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    job_id = models.BigIntegerField(default=0)
    updated_at = models.DateTimeField(db_default=Now())

    def __str__(self) -> str:
        return f"{self.name} at {self.completed_at} #{self.job_id}"
