"""An attempt's outcome, and what it does to the job row.

``settle`` is pure: it reads the claimed job and the outcome and returns the
store's transition (``store.transitions``) with the attempt's record; the
completer hands both to the store, which writes them behind the lease fence.
Success → completed with the return value; an error → retrying after a backoff
while retries remain, else failed (the dead letter); a permanent error → failed
at once; a timeout is a retryable failure; inputs that could not be staged →
retrying without charging a retry, until ``STAGING_RETRIES`` such attempts, then
failed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from django.utils.module_loading import import_string

from ..attempts import attempt_list
from ..conf import settings
from ..exceptions import Permanent
from ..models import Job
from ..rungs import IN_PROCESS
from ..store import Cancelled, Completed, Failed, Retry, Transition, cancel_message
from .backoff import retry_delay


class Kind(StrEnum):
    SUCCESS = "success"
    ERROR = "error"  # retryable
    PERMANENT = "permanent"  # straight to dead-letter
    TIMEOUT = "timeout"  # retryable
    CANCELLED = "cancelled"  # lease lost or handed back: nothing to write
    STOPPED = "stopped"  # an operator cancelled it while it ran: it ends cancelled
    UNSTAGED = "unstaged"  # its inputs could not be staged: the handler never ran


@dataclass
class Outcome:
    """What happened in one attempt, measured by the executor."""

    kind: Kind
    started_at: datetime
    finished_at: datetime
    wall_time: float = 0.0
    cpu_time: float = 0.0
    # Measured by the subprocess rung only (0 where the rung cannot separate them).
    peak_rss: int = 0  # bytes
    disk_written: int = 0  # bytes
    executor: str = IN_PROCESS  # the rung that ran the attempt
    return_value: Any = None
    exception_class: str = ""
    message: str = ""
    traceback: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return self.kind in (Kind.ERROR, Kind.PERMANENT, Kind.TIMEOUT, Kind.UNSTAGED)


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


@dataclass(frozen=True)
class Verdict:
    """What an attempt does to its job: the store's ``transition`` and the
    ``record`` appended to the job's attempt log."""

    transition: Transition
    record: dict[str, Any]

    @property
    def state(self) -> str:
        return self.transition.state

    @property
    def retry_in(self) -> timedelta | None:
        return self.transition.delay if isinstance(self.transition, Retry) else None


def settle(job: Job, outcome: Outcome, worker_id: str, task: Any = None) -> Verdict | None:
    """What ``outcome`` does to ``job`` (read, never changed); ``None`` for a
    cancelled attempt, which writes nothing."""
    if outcome.kind == Kind.CANCELLED:
        return None
    transition: Transition
    if outcome.kind == Kind.STOPPED:
        transition = Cancelled(cancel_message(outcome.extra.get("by", "")))
        status = "cancelled"
    elif outcome.kind == Kind.SUCCESS:
        transition = Completed(outcome.return_value)
        status = "completed"
    elif outcome.kind == Kind.UNSTAGED:
        transition = _unstaged(job, outcome, task)
        status = "unstaged"
    elif outcome.kind != Kind.PERMANENT and job.retry_count < job.max_retries:
        transition = Retry(retry_delay(job.retry_count + 1, task), _error_line(outcome))
        status = "timeout" if outcome.kind == Kind.TIMEOUT else "retrying"
    else:
        transition = Failed(_error_line(outcome), permanent=outcome.kind == Kind.PERMANENT)
        status = "timeout" if outcome.kind == Kind.TIMEOUT else "failed"
    number = len(attempt_list(job.attempts)) + 1
    return Verdict(transition, _attempt_record(number, outcome, worker_id, status))


def staging_failures(job: Job) -> int:
    """Attempts of ``job`` whose inputs could not be staged (its attempt log says)."""
    return sum(
        1
        for a in attempt_list(job.attempts)
        if isinstance(a, dict) and a.get("status") == "unstaged"
    )


def _unstaged(job: Job, outcome: Outcome, task: Any) -> Transition:
    """The seed's launch failure: not the handler's doing, so not charged to its
    retries, but capped (``STAGING_RETRIES``) so an input that can never be read
    fails the job rather than cycling for ever."""
    failures = staging_failures(job)
    if failures < settings.staging_retries:
        return Retry(retry_delay(failures + 1, task), _error_line(outcome), charged=False)
    return Failed(
        f"{_error_line(outcome)} (inputs could not be staged {failures + 1} times; STAGING_RETRIES)"
    )


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
