"""Every error dispatch_jobs raises or records, in one place. Each message says what was wrong.

Every class is a ``DispatchJobsError``. Where a caller expects a standard class
too, it is an extra base: a ``ValueError`` for bad input, Django's
``InvalidTask`` for a refused enqueue (the tasks framework's own contract), and
``ImproperlyConfigured`` for a missing optional dependency.
"""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

from . import compat


class DispatchJobsError(Exception):
    """Base class of every error dispatch_jobs raises on purpose."""


class JobNotFound(DispatchJobsError):
    """The job row does not exist (it was never created, or it was deleted)."""

    def __init__(self, job_id: object) -> None:
        super().__init__(f"Job {job_id} does not exist.")
        self.job_id = job_id


class LeaseLost(DispatchJobsError):
    """The caller no longer holds the job's lease: the write was refused.

    Raised when the fence (running, held by this worker, at this epoch) fails.
    A worker treats it as a silent no-op: the lease moved on, so its outcome is
    discarded and the row is left exactly as the new holder has it.
    """

    def __init__(self, job_id: object, worker_id: str, epoch: int) -> None:
        super().__init__(
            f"Lease on job {job_id} lost: it is no longer running under worker "
            f"{worker_id!r} at epoch {epoch}; the write was skipped."
        )
        self.job_id = job_id
        self.worker_id = worker_id
        self.epoch = epoch


class LeaseWithoutWorker(DispatchJobsError):
    """A claim asked to grant a lease but named no worker to hold it."""

    def __init__(self) -> None:
        super().__init__(
            "A claim that grants a lease (lease_ttl set) needs a worker_id to hold it; "
            "nothing was claimed."
        )


class WorkerLost(DispatchJobsError):
    """Recorded (never raised) in a job's attempts log: the job's lease lapsed,
    its worker having stopped renewing it (crashed, killed, or cut off from the
    database), and the job was taken back by reclaim."""


class OutcomeNotStorable(DispatchJobsError):
    """Recorded (never raised) in a job's attempts log: the database refused the
    attempt's outcome as it was, so the attempt is recorded as this failure."""


class InvalidCursor(DispatchJobsError):
    """A paging cursor was malformed or was not issued by this job list."""

    def __init__(self, cursor: str, reason: str) -> None:
        super().__init__(f"Invalid cursor {cursor!r}: {reason}.")
        self.cursor = cursor


class PayloadTooLarge(DispatchJobsError):
    """The encoded payload is over the configured cap."""

    def __init__(self, name: str, size: int, cap: int) -> None:
        super().__init__(
            f"Payload of {name!r} is {size} bytes encoded, over the cap of {cap} bytes "
            "(DISPATCH_JOBS['MAX_PAYLOAD_BYTES']); no job was written."
        )
        self.size = size
        self.cap = cap


class InvalidJob(DispatchJobsError, ValueError):
    """A job's fields are out of bounds; raised before any row is written."""


class InvalidResources(DispatchJobsError, ValueError):
    """A resource quantity or key could not be parsed."""


class InvalidDuration(DispatchJobsError, ValueError):
    """A duration (an option, a setting, an argument) is not one, or out of its bounds.
    Raised by ``limits.to_duration``; callers re-raise it as their own boundary's error."""


class Permanent(DispatchJobsError):
    """Raise (or wrap) to fail a job at once, straight to dead-letter, with no retry.

    ``raise Permanent("customer deleted")`` or ``raise Permanent(exc) from exc``.
    """

    def __init__(self, error: BaseException | str) -> None:
        self.error = error
        super().__init__(str(error))


# --- Enqueue (the tasks backend). ``dispatch_jobs.validation`` re-exports the two
# the docs name there.


class InvalidArguments(DispatchJobsError, compat.InvalidTask, ValueError):
    """The arguments of an enqueue cannot be stored or would not bind to the task."""


class Unschedulable(DispatchJobsError, compat.InvalidTask):
    """No live worker could ever satisfy the job's resource requirement."""


class InvalidInput(DispatchJobsError, compat.InvalidTask, ValueError):
    """An artifact input of an enqueue is refused (docs/how-to/inputs.md); ``input``
    names it. Raised before any row is written."""

    def __init__(self, message: str, input_name: str = "") -> None:
        super().__init__(message)
        self.input = input_name


class UnknownInput(InvalidInput):
    """An input was bound that the task does not declare."""


class MissingInput(InvalidInput):
    """A required input was not bound."""


class InputTooLarge(InvalidInput):
    """The artifact bound to an input is larger than the input's ``max_bytes``."""


class InputMediaTypeRefused(InvalidInput):
    """The artifact bound to an input has a media type the input does not accept."""


class ArtifactNotFound(InvalidInput):
    """The artifact bound to an input does not exist (never registered, or deleted)."""


class InvalidArtifact(DispatchJobsError, ValueError):
    """Bytes or a file could not be registered as an artifact (the message says why)."""


class TaskNotFound(DispatchJobsError):
    """A job names a task that cannot be imported (renamed or removed)."""


# --- Running a job (the worker). The class path of each is what a job's attempts
# log records, e.g. ``dispatch_jobs.exceptions.JobTimedOut``.


class JobCancelled(DispatchJobsError):
    """The job was cancelled while it ran: its lease was lost or the worker is
    handing it back (its outcome is discarded), or an operator cancelled it (it
    ends cancelled). Raise it to stop promptly."""


class JobTimedOut(JobCancelled):
    """The job ran past its timeout; it is recorded as a (retryable) timeout."""


class InvalidPayload(Permanent):
    """The job's payload cannot be decoded into args and kwargs."""


class InvalidReturnValue(Permanent):
    """The handler returned a value that cannot be stored as JSON."""


class UndecodableJob(Permanent):
    """A claimed row has a column the worker cannot decode."""


class StagingFailed(DispatchJobsError):
    """An input could not be staged into the worker's cache before the handler ran:
    its storage could not be read, or the cache could not be written. The attempt is
    not charged to the job's retries, up to ``STAGING_RETRIES`` staging failures."""


class ArtifactCorrupt(StagingFailed):
    """The bytes read from an artifact's storage do not hash to its content hash:
    they are refused, and nothing is put in the cache."""


# --- The subprocess rung (``worker.children``): recorded as the attempt's error.


class ChildDied(DispatchJobsError):
    """The child process running the job died (an exit, a signal, a segfault): a
    failed attempt of that job alone; the message gives the exit status."""


class JobOutOfMemory(DispatchJobsError, MemoryError):
    """The handler needed more memory than the job's ``resource_limits`` allow."""


class ChildUnavailable(DispatchJobsError):
    """No child process could be started to run the job (the message says why)."""


# --- The worker process.


class WorkerConfigError(DispatchJobsError, ValueError):
    """A worker argument or setting is invalid; nothing was started."""


class QueueNameError(DispatchJobsError, ValueError):
    """A queue name given to the worker is not one (the message says which)."""


class InvalidQueueLimits(DispatchJobsError, ValueError):
    """A queue limit (QUEUE_LIMITS setting, admin form) is not one (the message says why)."""


class GaveUp(DispatchJobsError):
    """The worker stopped before a transient error cleared."""


class Deaf(DispatchJobsError):
    """LISTEN succeeded, but the probe notification never arrived."""


# --- The admin and the metrics.


class QueryTooBroad(DispatchJobsError):
    """An admin query ran past the statement timeout and was cancelled."""

    def __init__(self, seconds: float) -> None:
        super().__init__(
            f"This view asked the database for more than it could answer in {seconds:g} s, "
            "so the query was stopped. Narrow the filter (a state, a queue, a task or a "
            "time range) and try again."
        )


METRICS_EXTRA_HINT = "pip install 'dispatch-jobs[metrics]'"


class MetricsUnavailable(DispatchJobsError, ImproperlyConfigured):
    """Metrics were asked for but prometheus-client is not installed."""

    def __init__(self, what: str) -> None:
        super().__init__(
            f"{what} needs prometheus-client, which is not installed: {METRICS_EXTRA_HINT}."
        )


class UnsupportedDatabase(DispatchJobsError):
    """The jobs database is not one dispatch_jobs has an engine for."""

    def __init__(self, vendor: str) -> None:
        super().__init__(
            f"dispatch_jobs runs on PostgreSQL, SQLite and MySQL/MariaDB; the jobs database "
            f"(DISPATCH_JOBS['DATABASE']) is {vendor!r}."
        )


class ReadOnlyRows(DispatchJobsError):
    """A write through one of the store's read querysets (``store.reads``): the
    app's rows are written by the store's verbs only."""


class InvalidSchedule(DispatchJobsError, ValueError):
    """A schedule's cron expression, interval or time zone cannot be used."""
