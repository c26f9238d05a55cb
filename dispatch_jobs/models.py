"""The job engine's tables: jobs, per-attempt usage, live workers, the two small
tables the fleet coordinates through (maintenance leadership, paused queues),
periodic schedules with their fired ticks, and the artifacts jobs take as inputs.

Only ``dispatch_jobs.store`` writes these rows.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.db.models.functions import Now

from .limits import QUEUE_MAX
from .ticks import MissedTicks


class JobState(models.TextChoices):
    PENDING = "pending", "Pending"
    RUNNING = "running", "Running"
    COMPLETED = "completed", "Completed"
    FAILED = "failed", "Failed"  # the dead-letter state
    RETRYING = "retrying", "Retrying"
    CANCELLED = "cancelled", "Cancelled"


class Quarantine(models.IntegerChoices):
    """Where a job stands in poison attribution (docs/worker.md, "Failure isolation")."""

    NONE = 0, "Ordinary"
    SUSPECT = 1, "Suspect: runs alone next"  # its lease lapsed while sharing a worker
    ALONE = 2, "Running alone"  # claimed to run with nothing beside it


READY_STATES = (JobState.PENDING, JobState.RETRYING)
FINISHED_STATES = (JobState.COMPLETED, JobState.FAILED, JobState.CANCELLED)


class JobQuerySet(models.QuerySet["Job"]):
    def ready(self) -> JobQuerySet:
        """Claimable now, by the database's clock."""
        return self.filter(state__in=READY_STATES, run_at__lte=Now())

    def running(self) -> JobQuerySet:
        return self.filter(state=JobState.RUNNING)

    def finished(self) -> JobQuerySet:
        return self.filter(state__in=FINISHED_STATES)


class Job(models.Model):
    """One unit of work: the seed's ``Job``, as a row.

    The id is a database-assigned, monotonically increasing integer, so it orders
    jobs by creation and serves as the paging cursor.
    """

    id = models.BigAutoField(primary_key=True)
    name = models.CharField(max_length=255, help_text="The task's import path or alias.")
    queue = models.CharField(max_length=QUEUE_MAX, default="default")
    payload = models.JSONField(default=dict, help_text="{'args': [...], 'kwargs': {...}}")
    state = models.CharField(max_length=16, choices=JobState.choices, default=JobState.PENDING)
    priority = models.IntegerField(default=0)
    max_retries = models.IntegerField(default=3)
    retry_count = models.IntegerField(default=0)
    last_error = models.TextField(blank=True, default="")
    # Every attempt's outcome: [{"attempt", "worker_id", "status", "exception_class",
    # "message", "traceback", "at"}], appended by the worker's fenced write.
    attempts = models.JSONField(default=list, blank=True)
    scope_app_id = models.CharField(max_length=100, blank=True, default="")
    scope_org_id = models.CharField(max_length=100, blank=True, default="")
    worker_id = models.CharField(max_length=100, blank=True, default="")
    run_at = models.DateTimeField(db_default=Now())
    started_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    timeout = models.DurationField(null=True, blank=True)
    artifact_bindings = models.JSONField(null=True, blank=True)
    # Resolved requirement in canonical units, as scalar columns the claim compares.
    cpu = models.BigIntegerField(default=0, help_text="millicores")
    memory = models.BigIntegerField(default=0, help_text="bytes")
    disk = models.BigIntegerField(default=0, help_text="bytes")
    gpu = models.BigIntegerField(default=0, help_text="milli-devices")
    # Custom keys as the seed's delimited string: ",fpga,tpu," ("" for none).
    custom_keys = models.CharField(max_length=500, blank=True, default="")
    resources = models.JSONField(default=dict, blank=True)
    resource_limits = models.JSONField(default=dict, blank=True)
    resource_class = models.CharField(max_length=100, blank=True, default="")
    execution = models.CharField(max_length=32, blank=True, default="in-process")
    input_bytes = models.BigIntegerField(default=0)
    primary_input_hash = models.CharField(max_length=128, blank=True, default="")
    lease_epoch = models.IntegerField(default=0)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    lease_ttl = models.DurationField(null=True, blank=True)
    evict_count = models.IntegerField(default=0)
    # Poison attribution (docs/worker.md, "Failure isolation"). A job whose lease
    # lapsed may have killed its worker, or merely run beside the job that did:
    # it becomes a suspect and runs alone on its next attempt, and only evictions
    # while alone count towards failing it as poison.
    quarantine = models.PositiveSmallIntegerField(
        default=Quarantine.NONE, choices=Quarantine.choices
    )
    lone_evictions = models.IntegerField(
        default=0, help_text="Evictions while running alone: the evidence of poison."
    )
    # An operator asked for this running job to stop: its worker sees the mark at
    # its next heartbeat, stops the handler and writes the job cancelled.
    cancel_requested_at = models.DateTimeField(null=True, blank=True)
    cancel_requested_by = models.CharField(max_length=150, blank=True, default="")
    return_value = models.JSONField(null=True, blank=True)
    replay_of = models.OneToOneField(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="replayed_by",
        help_text="The failed or cancelled job this one replays (at most one replay each).",
    )
    created_at = models.DateTimeField(db_default=Now())
    updated_at = models.DateTimeField(db_default=Now())
    # The enqueuing span's W3C trace context ({"traceparent": ..., "tracestate":
    # ...}), so the execution span joins the request's trace. Written only while
    # OpenTelemetry tracing is active (dispatch_jobs.tracing); NULL otherwise.
    trace_context = models.JSONField(null=True, blank=True)

    objects = JobQuerySet.as_manager()

    class Meta:
        ordering = ["-id"]
        permissions = [
            ("retry_job", "Can retry (replay) a failed or cancelled job"),
            ("cancel_job", "Can cancel a pending or retrying job"),
            ("run_job_now", "Can move a job's run time to now"),
            ("pause_queue", "Can pause and resume queues"),
        ]
        indexes = [
            # The ready claim. Partial on PostgreSQL and SQLite; MariaDB has no partial
            # indexes, and migrations 0002 and 0007 make this name a state-first
            # plain index there (as for dj_job_lease).
            models.Index(
                fields=["queue", "-priority", "run_at", "id"],
                name="dj_job_ready",
                condition=Q(state__in=["pending", "retrying"]),
            ),
            # Expired-lease reclaim reads running rows by expiry.
            models.Index(
                fields=["lease_expires_at"],
                name="dj_job_lease",
                condition=Q(state="running"),
            ),
            # Suspects waiting to run alone (poison attribution): few rows, and
            # only they are indexed. On MariaDB (no partial indexes) migrations 0004
            # and 0007 make this name a plain index led by the condition's columns.
            models.Index(
                fields=["queue", "run_at"],
                name="dj_job_suspect",
                condition=Q(quarantine=1, state__in=["pending", "retrying"]),
            ),
            # Newest-first listing under each filter (id is the cursor).
            models.Index(fields=["state", "-id"], name="dj_job_state_id"),
            models.Index(fields=["queue", "-id"], name="dj_job_queue_id"),
            # On PostgreSQL with the pattern operator class: it serves the exact
            # name and the name-prefix search (LIKE 'x%' under any collation), so
            # one index does what two did (migration 0009).
            models.Index(
                fields=["name", "-id"],
                name="dj_job_name_id",
                opclasses=["varchar_pattern_ops", "int8_ops"],
            ),
            models.Index(fields=["scope_app_id", "scope_org_id", "-id"], name="dj_job_scope_id"),
            models.Index(fields=["scope_org_id", "-id"], name="dj_job_org_id"),
            # The admin's sort keys and time/worker filters (migration 0003).
            models.Index(fields=["priority", "id"], name="dj_job_priority_id"),
            # Finished rows only (PostgreSQL, SQLite): every reader (the finished
            # sort and filter, the rollup, the purge) compares completed_at, which
            # implies it is not null, and an enqueue, a claim or a retry leaves the
            # index alone (migration 0009). MariaDB builds it plain.
            models.Index(
                fields=["completed_at", "id"],
                name="dj_job_completed_id",
                condition=Q(completed_at__isnull=False),
            ),
            models.Index(fields=["created_at", "id"], name="dj_job_created_id"),
            models.Index(fields=["worker_id", "-id"], name="dj_job_worker_id"),
        ]

    def __str__(self) -> str:
        return f"{self.name} #{self.pk} ({self.state})"

    @property
    def args(self) -> list:
        return list((self.payload or {}).get("args", []))

    @property
    def kwargs(self) -> dict:
        return dict((self.payload or {}).get("kwargs", {}))


class Usage(models.Model):
    """One attempt's measurements: the seed's ``Usage``."""

    id = models.BigAutoField(primary_key=True)
    job_id = models.BigIntegerField(db_index=True)
    name = models.CharField(max_length=255)
    queue = models.CharField(max_length=QUEUE_MAX)
    attempt = models.IntegerField()
    status = models.CharField(max_length=16, choices=JobState.choices)
    input_bytes = models.BigIntegerField(default=0)
    resources = models.JSONField(default=dict, blank=True)
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


class WorkerState(models.TextChoices):
    ACTIVE = "active", "Active"
    DRAINING = "draining", "Draining"


class Worker(models.Model):
    """A live ``runjobs`` process, registered on start and removed on exit."""

    id = models.CharField(max_length=100, primary_key=True)
    hostname = models.CharField(max_length=255)
    pid = models.IntegerField()
    queues = models.JSONField(default=list)
    concurrency = models.IntegerField()
    capacity = models.JSONField(default=dict, blank=True)
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
    args = models.JSONField(default=list, blank=True)
    kwargs = models.JSONField(default=dict, blank=True)
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
