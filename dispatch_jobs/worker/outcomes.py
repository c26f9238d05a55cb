"""An attempt's outcome, and what it does to the job row (in memory only).

``settle`` is pure: it moves the in-memory job to its next state. The completer
persists it behind the lease fence. Success → completed with the return value;
an error → retrying after a backoff while retries remain, else failed (the dead
letter); a permanent error → failed at once; a timeout is a retryable failure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from django.utils.module_loading import import_string

from ..attempts import attempt_list
from ..exceptions import Permanent
from ..models import Job, JobState, Quarantine
from .backoff import retry_delay


class Kind(StrEnum):
    SUCCESS = "success"
    ERROR = "error"  # retryable
    PERMANENT = "permanent"  # straight to dead-letter
    TIMEOUT = "timeout"  # retryable
    CANCELLED = "cancelled"  # lease lost or handed back: nothing to write


@dataclass
class Outcome:
    """What happened in one attempt, measured by the executor."""

    kind: Kind
    started_at: datetime
    finished_at: datetime
    wall_time: float = 0.0
    cpu_time: float = 0.0
    return_value: Any = None
    exception_class: str = ""
    message: str = ""
    traceback: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return self.kind in (Kind.ERROR, Kind.PERMANENT, Kind.TIMEOUT)


def class_path(exc: BaseException) -> str:
    kind = type(exc)
    return f"{kind.__module__}.{kind.__qualname__}"


def is_permanent(exc: BaseException, task: Any = None) -> bool:
    """``Permanent(...)``, or an instance of a class the task declares permanent
    (``permanent_exceptions``: classes or their dotted paths)."""
    if isinstance(exc, Permanent):
        return True
    for declared in getattr(task, "permanent_exceptions", None) or ():
        try:
            cls = import_string(declared) if isinstance(declared, str) else declared
        except ImportError:
            continue
        if isinstance(cls, type) and isinstance(exc, cls):
            return True
    return False


def settle(job: Job, outcome: Outcome, worker_id: str, task: Any = None) -> timedelta | None:
    """Apply ``outcome`` to the in-memory ``job``; return the retry delay when the
    job goes to retrying (``None`` otherwise). Cancelled outcomes change nothing."""
    if outcome.kind == Kind.CANCELLED:
        return None
    retry_in: timedelta | None = None
    job.quarantine = Quarantine.NONE  # it ran to an outcome: it did not kill its worker
    if outcome.kind == Kind.SUCCESS:
        job.state = JobState.COMPLETED
        job.return_value = outcome.return_value
        status = "completed"
    elif outcome.kind != Kind.PERMANENT and job.retry_count < job.max_retries:
        job.retry_count += 1
        job.state = JobState.RETRYING
        retry_in = retry_delay(job.retry_count, task)
        job.run_at = outcome.finished_at + retry_in
        status = "timeout" if outcome.kind == Kind.TIMEOUT else "retrying"
    else:
        job.state = JobState.FAILED
        status = "timeout" if outcome.kind == Kind.TIMEOUT else "failed"
    if outcome.failed:
        job.last_error = _error_line(outcome)
    if job.state in (JobState.COMPLETED, JobState.FAILED):
        job.completed_at = outcome.finished_at
    previous = attempt_list(job.attempts)
    job.attempts = [*previous, _attempt_record(len(previous) + 1, outcome, worker_id, status)]
    return retry_in


def _error_line(outcome: Outcome) -> str:
    name = outcome.exception_class.rsplit(".", 1)[-1] or "Error"
    return f"{name}: {outcome.message}" if outcome.message else name


def _attempt_record(number: int, outcome: Outcome, worker_id: str, status: str) -> dict[str, Any]:
    return {
        "attempt": number,
        "worker_id": worker_id,
        "status": status,
        "exception_class": outcome.exception_class,
        "message": outcome.message,
        "traceback": outcome.traceback,
        "started_at": outcome.started_at.isoformat(),
        "finished_at": outcome.finished_at.isoformat(),
    }
