"""The executor: runs one claimed job in the current thread and measures it.

It does NO database writes: it loads the task, decodes the payload, stages the
job's declared inputs into the worker's cache (``staging``), restores the job's
scope, sends ``task_started`` / ``task_finished`` (Django's contract: the failure
signal is sent inside the ``except`` block), and settles the outcome on the
in-memory job. The completer persists it behind the lease fence.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
import traceback as tb
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.utils import timezone

from ..compat import (
    Task,
    log_task_finished,
    log_task_started,
    normalize_json,
    task_finished,
    task_started,
)
from ..exceptions import (
    InvalidPayload,
    InvalidReturnValue,
    JobTimedOut,
    StagingFailed,
    TaskNotFound,
    UndecodableJob,
)
from ..limits import RETURN_VALUE_MAX_BYTES
from ..models import Job
from ..names import load_task
from ..rungs import IN_PROCESS
from ..scope import scope
from ..storable import find_unstorable, storable_text
from ..store import Settled, Spent
from ..tracing import execution_span
from .context import (
    TIMED_OUT,
    Cancellation,
    ContextSlot,
    JobContext,
    reset_current_job,
    set_current_job,
)
from .decode import problem_with
from .outcomes import Kind, Outcome, Verdict, class_path, is_permanent, settle
from .results import backend_class, has_effect, task_result
from .staging import ArtifactCache, StagedInput, process_cache

EXECUTOR_NAME = IN_PROCESS
# The most a return value may take encoded (JSON), and how much of an error's
# message and traceback is kept: an outcome must stay a row any database takes.
MAX_RETURN_BYTES = RETURN_VALUE_MAX_BYTES
MAX_MESSAGE_CHARS = 10_000
MAX_TRACEBACK_CHARS = 50_000
logger = logging.getLogger("dispatch_jobs.worker")


@dataclass
class Attempt:
    """One finished attempt: the job as claimed (never changed), the epoch it ran
    under, its outcome, and its ``verdict`` (what it does to the job; ``None``
    when it writes nothing: cancelled, its lease lost or handed back)."""

    job: Job
    epoch: int
    outcome: Outcome
    verdict: Verdict | None = None

    @property
    def retry_in(self) -> timedelta | None:
        return self.verdict.retry_in if self.verdict else None

    def settled(self, spent: Spent | None) -> Settled:
        """The store's value for this attempt's write."""
        assert self.verdict is not None
        verdict = self.verdict
        return Settled(self.job, self.epoch, verdict.transition, verdict.record, spent)

    def after(self) -> Job:
        """A copy of the job as this attempt leaves it (for what reports on it)."""
        return self.settled(None).applied(self.outcome.finished_at)


def deadline_for(job: Job) -> float | None:
    """The job's deadline on this process's monotonic clock (None: no timeout)."""
    if not isinstance(job.timeout, timedelta):
        return None  # none, or undecodable (then the job fails before it runs)
    return time.monotonic() + job.timeout.total_seconds()


def execute(
    job: Job,
    worker_id: str,
    cancellation: Cancellation,
    deadline: float | None,
    cache: ArtifactCache | None = None,
    staged: Mapping[str, StagedInput] | None = None,
) -> Attempt:
    """Run ``job`` once in this thread; its outcome and what it does to the job.
    Its inputs are staged into ``cache`` (default: this process's) first and stay
    pinned there until the handler returns; or, given ``staged`` (a child of the
    subprocess rung: its worker staged and pinned them), are those."""
    clock = _Clock()
    try:
        problem = problem_with(job)
        if problem is not None:
            raise UndecodableJob(f"Job {job.pk} cannot be run: {problem}.")
        task = load_task(job.name)
        args, kwargs = decode_payload(job)
    except (TaskNotFound, InvalidPayload, UndecodableJob) as exc:
        outcome = clock.outcome(Kind.PERMANENT, exc=exc)
        return Attempt(job, job.lease_epoch, outcome, settle(job, outcome, worker_id))
    if cancellation.stop_requested:
        # Cancelled by an operator before a thread took it: it never starts.
        outcome = clock.stopped(cancellation, "cancelled before it started")
        return Attempt(job, job.lease_epoch, outcome, settle(job, outcome, worker_id))
    with contextlib.ExitStack() as pins:
        inputs = dict(staged or {})
        if job.artifact_bindings and staged is None:
            try:
                inputs = pins.enter_context(
                    (cache or process_cache()).staged(job.artifact_bindings)
                )
            except StagingFailed as exc:
                outcome = clock.outcome(Kind.UNSTAGED, exc=exc)
                return Attempt(job, job.lease_epoch, outcome, settle(job, outcome, worker_id, task))
        context = ContextSlot(
            lambda: JobContext(
                task_result=task_result(job, task),
                job_id=job.pk,
                deadline=deadline,
                cancellation=cancellation,
                inputs=inputs,
            ),
            cancellation,
            deadline,
        )
        token = set_current_job(context)
        try:
            return _run_handler(job, task, args, kwargs, context, clock, worker_id)
        finally:
            reset_current_job(token)


def _run_handler(
    job: Job,
    task: Task,
    args: list[Any],
    kwargs: dict[str, Any],
    context: ContextSlot,
    clock: _Clock,
    worker_id: str,
) -> Attempt:
    sender = backend_class(task)
    try:
        if has_effect(task_started, log_task_started):
            task_started.send(sender=sender, task_result=context.get().task_result)
        with scope(job.scope_app_id, job.scope_org_id), execution_span(job):
            if task.takes_context:
                raw = task.call(context.get(), *args, **kwargs)
            else:
                raw = task.call(*args, **kwargs)
        value = normalize_return(raw)
    except BaseException as exc:  # noqa: BLE001 - whatever a handler raises is its outcome
        # KeyboardInterrupt and SystemExit included: raised inside a handler they
        # are the handler's doing (the worker's own signals never reach an executor
        # thread: its handlers run on the main thread and only request a drain).
        outcome = clock.outcome(_classify(exc, context, task), exc=exc)
        if outcome.kind == Kind.STOPPED:
            outcome.extra["by"] = context.cancellation.by
        attempt = Attempt(job, job.lease_epoch, outcome, settle(job, outcome, worker_id, task))
        # Inside the except block, as Django does: receivers can log sys.exc_info().
        _send_finished(sender, attempt, task)
        return attempt
    outcome = _finished_outcome(clock, context, value)
    attempt = Attempt(job, job.lease_epoch, outcome, settle(job, outcome, worker_id, task))
    _send_finished(sender, attempt, task)
    return attempt


def _send_finished(sender: type, attempt: Attempt, task: Task) -> None:
    """``task_finished`` for a settled attempt. A failing receiver is logged, never
    raised: the outcome must still be written, or a completed job would run again."""
    outcome, job = attempt.outcome, attempt.job
    if attempt.verdict is None:
        return  # the outcome is discarded; the job is someone else's now
    # Django's receiver logs a failure at ERROR: only a success may go unheard.
    if outcome.kind == Kind.SUCCESS and not has_effect(task_finished, log_task_finished):
        return
    try:
        task_finished.send(sender=sender, task_result=task_result(attempt.after(), task))
    except Exception:  # noqa: BLE001
        logger.exception("Job %s: a task_finished receiver failed.", job.pk)


def decode_payload(job: Job) -> tuple[list[Any], dict[str, Any]]:
    payload = job.payload
    if payload is None:
        return [], {}
    if not isinstance(payload, dict):
        raise InvalidPayload(
            f"Job {job.pk}: column 'payload' must be an object with 'args' and 'kwargs', "
            f"got {type(payload).__name__}."
        )
    args, kwargs = payload.get("args", []), payload.get("kwargs", {})
    if not isinstance(args, list) or not isinstance(kwargs, dict):
        raise InvalidPayload(
            f"Job {job.pk}: column 'payload' cannot be decoded: 'args' must be a list and "
            f"'kwargs' an object, got {type(args).__name__} and {type(kwargs).__name__}."
        )
    return args, kwargs


def normalize_return(value: Any) -> Any:
    """The handler's return value as it will be stored, or ``InvalidReturnValue``
    (a permanent failure of this job alone) when no database could store it."""
    if value is None or isinstance(value, (bool, int)):
        return value  # the common case, nothing to check
    # Walked before normalising too: normalize_json recurses, so depth first.
    problem = find_unstorable(value)
    if problem is not None:
        raise InvalidReturnValue(f"The return value is not storable: {problem}.")
    try:
        normalized = normalize_json(value)
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidReturnValue(
            f"The return value ({type(value).__name__}) cannot be stored as JSON: {exc}. "
            "Return JSON-serialisable data (dict, list, str, int, float, bool, None)."
        ) from exc
    problem = find_unstorable(normalized)
    if problem is None:
        size = len(json.dumps(normalized)) if isinstance(normalized, (str, list, dict)) else 0
        if size > MAX_RETURN_BYTES:
            problem = f"{size} bytes encoded, over the cap of {MAX_RETURN_BYTES} bytes"
    if problem is not None:
        raise InvalidReturnValue(f"The return value is not storable: {problem}.")
    return normalized


def _classify(exc: BaseException, context: ContextSlot, task: Task) -> Kind:
    if context.cancellation.stop_requested:
        return Kind.STOPPED  # whatever it raised on its way out, it was cancelled
    if context.cancellation.is_set() and context.cancellation.reason != TIMED_OUT:
        return Kind.CANCELLED  # lease lost or handed back: the outcome is discarded
    if isinstance(exc, JobTimedOut) or context.timed_out:
        return Kind.TIMEOUT
    if is_permanent(exc, task):
        return Kind.PERMANENT
    return Kind.ERROR


def _finished_outcome(clock: _Clock, context: ContextSlot, value: Any) -> Outcome:
    if context.cancellation.stop_requested:
        return clock.stopped(context.cancellation, "returned after its cancel request")
    if context.cancellation.is_set() and context.cancellation.reason != TIMED_OUT:
        return clock.outcome(Kind.CANCELLED, message=context.cancellation.reason)
    if context.timed_out:
        return clock.outcome(Kind.TIMEOUT, message="returned after its timeout had passed")
    return clock.outcome(Kind.SUCCESS, value=value)


class _Clock:
    """Wall time and the executing thread's CPU time of one attempt."""

    def __init__(self) -> None:
        self.started_at = timezone.now()
        self._wall = time.monotonic()
        self._cpu = time.thread_time()

    def stopped(self, cancellation: Cancellation, message: str) -> Outcome:
        """The outcome of a job an operator cancelled while it ran."""
        outcome = self.outcome(Kind.STOPPED, message=message)
        outcome.exception_class = "dispatch_jobs.exceptions.JobCancelled"
        outcome.extra["by"] = cancellation.by
        return outcome

    def outcome(
        self, kind: Kind, *, exc: BaseException | None = None, value: Any = None, message: str = ""
    ) -> Outcome:
        outcome = Outcome(
            kind=kind,
            started_at=self.started_at,
            finished_at=timezone.now(),
            wall_time=time.monotonic() - self._wall,
            cpu_time=time.thread_time() - self._cpu,
            return_value=value,
            message=message,
        )
        if exc is not None:
            # Whatever the exception says is recorded, made storable (a NUL or a
            # lone surrogate in a message must not sink the completion batch).
            outcome.exception_class = storable_text(class_path(exc), limit=500)
            outcome.message = storable_text(_message(exc), limit=MAX_MESSAGE_CHARS)
            outcome.traceback = storable_text(_traceback(exc), limit=MAX_TRACEBACK_CHARS)
        return outcome


def _message(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception as error:  # noqa: BLE001 - a broken __str__ is still an outcome
        return f"<str() of the exception failed: {type(error).__name__}>"


def _traceback(exc: BaseException) -> str:
    try:
        return "".join(tb.format_exception(exc))
    except Exception as error:  # noqa: BLE001
        return f"<the traceback could not be formatted: {type(error).__name__}>"


__all__ = ["EXECUTOR_NAME", "Attempt", "execute"]
