"""The fleet: live workers, the maintenance leadership, and the queues' controls
(pause, limits) with the rate window's starts."""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.db.models.functions import Now

from ..limits import QUEUE_MAX
from .stored_json import StoredJSONDecoder


class WorkerState(models.TextChoices):
    ACTIVE = "active", "Active"
    DRAINING = "draining", "Draining"


class Worker(models.Model):
    """A live ``runjobs`` process, registered on start and removed on exit."""

    id = models.CharField(max_length=100, primary_key=True)
    hostname = models.CharField(max_length=255)
    pid = models.IntegerField()
    queues = models.JSONField(decoder=StoredJSONDecoder, default=list)
    concurrency = models.IntegerField()
    capacity = models.JSONField(decoder=StoredJSONDecoder, default=dict, blank=True)
    execution = models.CharField(
        max_length=32, default="in-process", help_text="The rung every job runs at on this worker."
    )
    state = models.CharField(max_length=16, choices=WorkerState.choices, default=WorkerState.ACTIVE)
    started_at = models.DateTimeField(db_default=Now())
    last_seen_at = models.DateTimeField(db_default=Now(), db_index=True)
    # Set by the worker's heartbeat while its claims keep failing; cleared once
    # one succeeds. The admin shows such a worker as unhealthy.
    claim_error = models.TextField(null=True, blank=True, help_text="The last claim failure.")
    claim_error_since = models.DateTimeField(
        null=True, blank=True, help_text="When the current run of claim failures began."
    )

    class Meta:
        ordering = ["hostname", "id"]

    def __str__(self) -> str:
        return self.id


class Leadership(models.Model):
    """A named database lease: which worker runs a fleet-wide duty (maintenance)."""

    name = models.CharField(max_length=100, primary_key=True)
    holder = models.CharField(max_length=100)
    expires_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.name} → {self.holder}"


class LimitsSource(models.TextChoices):
    """Who set a queue's limits: settings sync leaves the admin's alone."""

    NONE = "", "None"
    SETTINGS = "settings", "Settings (QUEUE_LIMITS)"
    ADMIN = "admin", "Admin"


# The queue control rows with a limit: claims skip them but for the limited claim.
LIMITED = (
    Q(max_running__isnull=False)
    | Q(max_running_per_org__isnull=False)
    | Q(rate_limit__isnull=False)
)


class QueueControl(models.Model):
    """Operator state of a queue: a paused queue is skipped by every claim; a
    queue with limits is claimed from under its row lock (docs/how-to/limits.md).
    Empty limits (NULL) are unlimited."""

    name = models.CharField(max_length=QUEUE_MAX, primary_key=True)
    paused = models.BooleanField(default=False)
    max_running = models.PositiveIntegerField(
        null=True, blank=True, help_text="Most jobs of this queue running at once, fleet-wide."
    )
    max_running_per_org = models.PositiveIntegerField(
        null=True, blank=True, help_text="Most jobs of one scope_org_id running at once."
    )
    rate_limit = models.PositiveIntegerField(
        null=True, blank=True, help_text="Most job starts in any rate_period."
    )
    rate_period = models.DurationField(null=True, blank=True)
    limits_source = models.CharField(
        max_length=16, choices=LimitsSource.choices, default=LimitsSource.NONE, blank=True
    )
    updated_at = models.DateTimeField(db_default=Now())

    class Meta:
        permissions = [("limit_queue", "Can change queue concurrency and rate limits")]

    def __str__(self) -> str:
        return f"{self.name} ({'paused' if self.paused else 'active'})"

    @property
    def limited(self) -> bool:
        return (
            self.max_running is not None
            or self.max_running_per_org is not None
            or self.rate_limit is not None
        )


class QueueStart(models.Model):
    """One job start of a rate-limited queue, kept for one rate period: the
    sliding window the claim counts (under the queue's control row lock) and
    prunes. Only queues with a rate limit get rows."""

    id = models.BigAutoField(primary_key=True)
    queue = models.CharField(max_length=QUEUE_MAX)
    started_at = models.DateTimeField(db_default=Now())

    class Meta:
        indexes = [models.Index(fields=["queue", "started_at"], name="dj_queuestart_window")]

    def __str__(self) -> str:
        return f"{self.queue} started a job at {self.started_at}"
