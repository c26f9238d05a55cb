"""Periodic schedules and their fired ticks."""

from __future__ import annotations

from django.db import models
from django.db.models.functions import Now

from ..ticks import MissedTicks
from .stored_json import StoredJSONDecoder


class ScheduleSource(models.TextChoices):
    CODE = "code", "Code"  # @periodic or DISPATCH_JOBS["SCHEDULES"], synced by workers
    ADMIN = "admin", "Admin"


class Schedule(models.Model):
    """A periodic job: a task enqueued at every tick of a cron expression (in the
    schedule's time zone) or of a fixed interval.

    Fired by the elected maintenance worker through ``store.fire_schedule_tick``;
    each tick is recorded in ``ScheduleTick``, whose unique key makes a tick fire
    at most once however many workers race on it. Only the store writes these rows.
    """

    id = models.BigAutoField(primary_key=True)
    name = models.CharField(max_length=200, unique=True)
    task = models.CharField(max_length=255, help_text="The task's import path or alias.")
    cron = models.CharField(
        max_length=100, blank=True, default="", help_text="Five fields, e.g. '*/5 * * * *'."
    )
    interval = models.DurationField(null=True, blank=True, help_text="Instead of cron.")
    timezone = models.CharField(
        max_length=64, default="UTC", help_text="IANA zone the cron expression reads in."
    )
    args = models.JSONField(decoder=StoredJSONDecoder, default=list, blank=True)
    kwargs = models.JSONField(decoder=StoredJSONDecoder, default=dict, blank=True)
    queue = models.CharField(
        max_length=100, blank=True, default="", help_text="Empty: the task's own queue."
    )
    priority = models.IntegerField(
        null=True, blank=True, help_text="Empty: the task's own priority."
    )
    enabled = models.BooleanField(default=True)
    missed = models.CharField(
        max_length=16, choices=MissedTicks.choices, default=MissedTicks.LATEST
    )
    source = models.CharField(
        max_length=16, choices=ScheduleSource.choices, default=ScheduleSource.ADMIN
    )
    next_fire_at = models.DateTimeField(null=True, blank=True)
    last_fired_at = models.DateTimeField(null=True, blank=True)
    last_tick_at = models.DateTimeField(null=True, blank=True)
    # Not a foreign key: finished jobs are purged, the schedule stays.
    last_job_id = models.BigIntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(db_default=Now())
    updated_at = models.DateTimeField(db_default=Now())

    class Meta:
        ordering = ["name"]
        permissions = [
            ("toggle_schedule", "Can enable and disable schedules"),
            ("run_schedule", "Can run a schedule's job now"),
        ]
        indexes = [models.Index(fields=["enabled", "next_fire_at"], name="dj_schedule_due")]

    def __str__(self) -> str:
        return self.name


class ScheduleTick(models.Model):
    """One fired tick of a schedule. The unique (schedule, tick) key is the
    exactly-once guard: the firing transaction inserts it before enqueuing, so a
    second worker firing the same tick fails on the key and enqueues nothing."""

    id = models.BigAutoField(primary_key=True)
    schedule = models.ForeignKey(Schedule, on_delete=models.CASCADE, related_name="ticks")
    tick = models.DateTimeField(help_text="The tick fired (UTC).")
    job_id = models.BigIntegerField(null=True, blank=True)
    fired_at = models.DateTimeField(db_default=Now())

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["schedule", "tick"], name="dj_scheduletick_key")
        ]
        indexes = [models.Index(fields=["fired_at"], name="dj_scheduletick_fired")]

    def __str__(self) -> str:
        return f"{self.schedule_id} at {self.tick:%Y-%m-%d %H:%M:%S}"
