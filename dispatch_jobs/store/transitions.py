"""What an attempt's outcome does to its job, as values the store writes.

The worker says what happened (``Completed``, ``Retry``, ``Failed``,
``Cancelled``) and the store turns it into the row's new columns behind the
lease fence (``engine.complete``). Nothing mutates a model to say what
happened: the claimed ``Job`` a ``Settled`` carries is read, never changed.

The two times that decide readiness and retention come from the database's
clock when the row is written: ``completed_at`` for a finished job, ``run_at``
(database-now plus ``Retry.delay``) for a retry, so worker clock skew cannot
make a retry run early or late.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, ClassVar

from ..attempts import attempt_list
from ..models import Job, JobState, Quarantine, Usage


@dataclass(frozen=True, slots=True)
class Completed:
    """The handler returned ``return_value`` (already checked storable)."""

    return_value: Any = None
    state: ClassVar[str] = JobState.COMPLETED


@dataclass(frozen=True, slots=True)
class Retry:
    """The attempt failed and a retry remains: ready again ``delay`` after
    database-now. ``error`` is the one-line summary kept in ``last_error``.
    ``charged``: whether it counts against the job's retries (an attempt whose
    inputs could not be staged never ran the handler, and is not)."""

    delay: timedelta
    error: str
    charged: bool = True
    state: ClassVar[str] = JobState.RETRYING


@dataclass(frozen=True, slots=True)
class Failed:
    """The job failed for good (the dead letter): its retries ran out, or the
    error was ``permanent`` and no retry was wanted."""

    error: str
    permanent: bool = False
    state: ClassVar[str] = JobState.FAILED


@dataclass(frozen=True, slots=True)
class Cancelled:
    """The job was stopped while it ran and will not run again."""

    error: str
    state: ClassVar[str] = JobState.CANCELLED


Transition = Completed | Retry | Failed | Cancelled

FINISHING = (Completed, Failed, Cancelled)

# The columns an outcome changes, beside the two database-clock times
# (``completed_at``, ``run_at``) and ``updated_at``. Nothing else is sent: the
# rest of the row is as claimed.
OUTCOME_COLUMNS = (
    "state",
    "retry_count",
    "last_error",
    "attempts",
    "return_value",
    "quarantine",  # an outcome written clears suspicion: the job did not kill its worker
)


@dataclass(frozen=True, slots=True)
class Spent:
    """What one attempt cost, as measured by whoever ran it: its usage row, minus
    what the job row already says (name, queue, status, resources, scope ...)."""

    wall_time: timedelta
    cpu_time: timedelta | None
    executor: str
    peak_rss: int = 0  # bytes; 0 where the rung cannot measure it
    disk_written: int = 0  # bytes


@dataclass(frozen=True, slots=True)
class Settled:
    """One attempt's outcome to write: ``job`` as claimed (read only), ``epoch``
    the lease it ran under, ``transition`` what happens to it, ``attempt`` the
    record appended to its attempt log, ``spent`` (when measured) its usage row,
    written with the outcome or not at all."""

    job: Job
    epoch: int
    transition: Transition
    attempt: dict[str, Any]
    spent: Spent | None = None

    @property
    def job_id(self) -> int:
        return self.job.pk

    @property
    def finishes(self) -> bool:
        return isinstance(self.transition, FINISHING)

    @property
    def retry_in(self) -> timedelta | None:
        return self.transition.delay if isinstance(self.transition, Retry) else None

    def values(self) -> dict[str, Any]:
        """The new value of each of ``OUTCOME_COLUMNS``."""
        job, transition = self.job, self.transition
        charged = isinstance(transition, Retry) and transition.charged
        return {
            "state": transition.state,
            "retry_count": job.retry_count + 1 if charged else job.retry_count,
            "last_error": job.last_error if isinstance(transition, Completed) else transition.error,
            "attempts": [*attempt_list(job.attempts), self.attempt],
            "return_value": transition.return_value if isinstance(transition, Completed) else None,
            "quarantine": Quarantine.NONE,
        }

    def applied(self, now: Any = None) -> Job:
        """A copy of the job as this outcome leaves it, for what reports on it
        (signals' ``TaskResult``s); the claimed job is left as it was. ``now``
        stands in for the database's clock in the copy's times."""
        after = Job.__new__(Job)
        after.__dict__.update(self.job.__dict__)
        after._state = copy.copy(self.job._state)
        for column, value in self.values().items():
            setattr(after, column, value)
        if self.finishes:
            after.completed_at = now
        elif self.retry_in is not None and now is not None:
            after.run_at = now + self.retry_in
        return after

    def with_transition(self, transition: Transition, attempt: dict[str, Any]) -> Settled:
        return Settled(self.job, self.epoch, transition, attempt, self.spent)

    def without_usage(self) -> Settled:
        return Settled(self.job, self.epoch, self.transition, self.attempt, None)


def usage_of(settled: Settled, worker_id: str) -> Usage:
    """The usage row of the attempt ``settled`` writes."""
    job, spent = settled.job, settled.spent
    assert spent is not None
    return Usage(
        job_id=job.pk,
        name=job.name,
        queue=job.queue,
        attempt=len(attempt_list(job.attempts)) + 1,
        status=settled.transition.state,
        input_bytes=job.input_bytes,
        resources=job.resources or {},
        wall_time=spent.wall_time,
        cpu_time=spent.cpu_time,
        peak_rss=spent.peak_rss,
        disk_written=spent.disk_written,
        executor=spent.executor,
        scope_app_id=job.scope_app_id,
        scope_org_id=job.scope_org_id,
        worker_id=worker_id,
    )
