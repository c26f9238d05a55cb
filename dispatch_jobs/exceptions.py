"""The errors dispatch_jobs raises. Each message says what was wrong."""

from __future__ import annotations


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


class Permanent(DispatchJobsError):
    """Raise (or wrap) to fail a job at once, straight to dead-letter, with no retry.

    ``raise Permanent("customer deleted")`` or ``raise Permanent(exc) from exc``.
    """

    def __init__(self, error: BaseException | str) -> None:
        self.error = error
        super().__init__(str(error))


class UnsupportedDatabase(DispatchJobsError):
    """The jobs database is not one dispatch_jobs has an engine for."""

    def __init__(self, vendor: str) -> None:
        super().__init__(
            f"dispatch_jobs runs on PostgreSQL, SQLite and MySQL/MariaDB; the jobs database "
            f"(DISPATCH_JOBS['DATABASE']) is {vendor!r}."
        )
