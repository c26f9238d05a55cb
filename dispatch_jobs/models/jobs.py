"""Jobs: the seed's ``Job`` as a row, its states and its queryset."""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.db.models.functions import Now

from ..limits import QUEUE_MAX
from .stored_json import StoredJSONDecoder


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
FINISHED = Q(state__in=FINISHED_STATES)  # the condition of the finished-only indexes
# The condition of the state index and the sort keys' (PostgreSQL, migration 0017):
# every job but the running ones, so a claim writes none of them.
NOT_RUNNING = ~Q(state=JobState.RUNNING)


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
    payload = models.JSONField(
        decoder=StoredJSONDecoder, default=dict, help_text="{'args': [...], 'kwargs': {...}}"
    )
    state = models.CharField(max_length=16, choices=JobState.choices, default=JobState.PENDING)
    priority = models.IntegerField(default=0)
    max_retries = models.IntegerField(default=3)
    retry_count = models.IntegerField(default=0)
    last_error = models.TextField(blank=True, default="")
    # Every attempt's outcome: [{"attempt", "worker_id", "status", "exception_class",
    # "message", "traceback", "at"}], appended by the worker's fenced write.
    attempts = models.JSONField(decoder=StoredJSONDecoder, default=list, blank=True)
    scope_app_id = models.CharField(max_length=100, blank=True, default="")
    scope_org_id = models.CharField(max_length=100, blank=True, default="")
    worker_id = models.CharField(max_length=100, blank=True, default="")
    run_at = models.DateTimeField(db_default=Now())
    started_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    timeout = models.DurationField(null=True, blank=True)
    artifact_bindings = models.JSONField(decoder=StoredJSONDecoder, null=True, blank=True)
    # Resolved requirement in canonical units, as scalar columns the claim compares.
    cpu = models.BigIntegerField(default=0, help_text="millicores")
    memory = models.BigIntegerField(default=0, help_text="bytes")
    disk = models.BigIntegerField(default=0, help_text="bytes")
    gpu = models.BigIntegerField(default=0, help_text="milli-devices")
    # Custom keys as the seed's delimited string: ",fpga,tpu," ("" for none).
    custom_keys = models.CharField(max_length=500, blank=True, default="")
    resources = models.JSONField(decoder=StoredJSONDecoder, default=dict, blank=True)
    resource_limits = models.JSONField(decoder=StoredJSONDecoder, default=dict, blank=True)
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
    return_value = models.JSONField(decoder=StoredJSONDecoder, null=True, blank=True)
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
    trace_context = models.JSONField(decoder=StoredJSONDecoder, null=True, blank=True)

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
            # Newest-first listing under each filter (id is the cursor). On
            # PostgreSQL the filter indexes hold finished rows only (migration
            # 0015), so an enqueue, a claim and a retry write none of them; the
            # state index and the two sort keys' indexes hold every row but the
            # running ones (0017), so a claim writes none of them. A list reads
            # the rows apart (store.reads.first_rows): running jobs (a fleet's
            # concurrency) through dj_job_lease. SQLite and MariaDB build them whole.
            models.Index(fields=["state", "-id"], name="dj_job_state_id", condition=NOT_RUNNING),
            models.Index(fields=["queue", "-id"], name="dj_job_queue_id", condition=FINISHED),
            # On PostgreSQL with the pattern operator class: it serves the exact
            # name and the name-prefix search (LIKE 'x%' under any collation), so
            # one index does what two did (migration 0009).
            models.Index(
                fields=["name", "-id"],
                name="dj_job_name_id",
                opclasses=["varchar_pattern_ops", "int8_ops"],
                condition=FINISHED,
            ),
            models.Index(
                fields=["scope_app_id", "scope_org_id", "-id"],
                name="dj_job_scope_id",
                condition=FINISHED,
            ),
            models.Index(fields=["scope_org_id", "-id"], name="dj_job_org_id", condition=FINISHED),
            # The admin's sort keys and time/worker filters (migration 0003).
            models.Index(
                fields=["priority", "id"], name="dj_job_priority_id", condition=NOT_RUNNING
            ),
            # Finished rows only (PostgreSQL, SQLite): every reader (the finished
            # sort and filter, the rollup, the purge) compares completed_at, which
            # implies it is not null, and an enqueue, a claim or a retry leaves the
            # index alone (migration 0009). MariaDB builds it plain.
            models.Index(
                fields=["completed_at", "id"],
                name="dj_job_completed_id",
                condition=Q(completed_at__isnull=False),
            ),
            models.Index(
                fields=["created_at", "id"], name="dj_job_created_id", condition=NOT_RUNNING
            ),
            models.Index(fields=["worker_id", "-id"], name="dj_job_worker_id", condition=FINISHED),
        ]

    def __str__(self) -> str:
        return f"{self.name} #{self.pk} ({self.state})"

    @property
    def args(self) -> list:
        """The call's positional arguments; none where the stored payload holds no
        list of them (a row the worker fails, naming the column, still has a result)."""
        payload = self.payload
        args = payload.get("args") if isinstance(payload, dict) else None
        return list(args) if isinstance(args, list) else []

    @property
    def kwargs(self) -> dict:
        """The call's keyword arguments; none where the stored payload holds no
        object of them."""
        payload = self.payload
        kwargs = payload.get("kwargs") if isinstance(payload, dict) else None
        return dict(kwargs) if isinstance(kwargs, dict) else {}
