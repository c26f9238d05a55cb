"""From a job row to Django's ``TaskResult``.

``Job.attempts`` is the worker's log, one dict per finished attempt::

    {"attempt": 1, "worker_id": "host:123:ab", "status": "failed",
     "exception_class": "builtins.ValueError", "message": "...", "traceback": "...",
     "started_at": "2026-01-01T10:00:00+00:00", "finished_at": "..."}

From it: ``worker_ids`` (one per attempt, plus the current holder while running),
``errors`` (one ``TaskError`` per attempt that did not complete), and the start
times. Status follows DESIGN.md: pending/retrying → READY, running → RUNNING,
completed → SUCCESSFUL, failed/cancelled → FAILED.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, cast

from django.conf import settings
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from . import compat

if TYPE_CHECKING:
    from .models import Job

STATUS_BY_STATE: dict[str, compat.TaskResultStatus] = {
    "pending": compat.TaskResultStatus.READY,
    "retrying": compat.TaskResultStatus.READY,
    "running": compat.TaskResultStatus.RUNNING,
    "completed": compat.TaskResultStatus.SUCCESSFUL,
    "failed": compat.TaskResultStatus.FAILED,
    "cancelled": compat.TaskResultStatus.FAILED,
}
# Attempts that raised nothing: a success, or a job handed back by a draining
# worker (an eviction that says nothing about the job). A lapsed lease IS an
# error entry: its worker died running it, and poison is judged on those.
_NOT_ERRORS = frozenset({"completed", "handed_back"})
# Shown for an attempt that failed without a Python exception (a lost process).
_UNKNOWN_EXCEPTION = {"timeout": "builtins.TimeoutError"}
_DEFAULT_EXCEPTION = "builtins.Exception"


def parse_result_id(result_id: object) -> int | None:
    """A job id from a result id: a decimal string or an int, else ``None``."""
    if isinstance(result_id, bool):
        return None
    if isinstance(result_id, int):
        return result_id if result_id > 0 else None
    if isinstance(result_id, str) and result_id.isascii() and result_id.isdigit():
        value = int(result_id)
        return value if 0 < value < 2**63 else None
    return None


def status_of(state: str) -> compat.TaskResultStatus:
    return STATUS_BY_STATE[state]


def task_for_job(task: compat.Task, job: Job, backend_alias: str) -> compat.Task:
    """The task as this job was enqueued: the row's queue, priority and run time."""
    return task_as_enqueued(task, job.queue, job.priority, backend_alias)


def task_as_enqueued(
    task: compat.Task, queue: str, priority: int, backend_alias: str
) -> compat.Task:
    """``task`` with the backend, queue and priority a row of it was stored with."""
    changes: dict[str, Any] = {}
    if task.backend != backend_alias:
        changes["backend"] = backend_alias
    if queue != task.queue_name:
        changes["queue_name"] = queue
    if priority != task.priority:
        changes["priority"] = priority
    if not changes:
        return task
    try:
        return dataclasses.replace(task, **changes)
    except compat.InvalidTask:
        # The configuration changed since (a queue was removed): show the task as
        # defined rather than refuse to report on a row that exists.
        return task


def enqueued_result(
    task: compat.Task,
    backend_alias: str,
    job_id: int,
    created_at: object,
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
) -> compat.TaskResult:
    """The result of a row just enqueued (``task`` from ``task_as_enqueued``): what
    ``job_to_result`` maps a new pending row to, built without the row."""
    return compat.TaskResult(
        task=task,
        id=str(job_id),
        status=compat.TaskResultStatus.READY,
        enqueued_at=_aware(created_at),
        started_at=None,
        finished_at=None,
        last_attempted_at=None,
        args=list(args),
        kwargs=dict(kwargs),
        backend=backend_alias,
        errors=[],
        worker_ids=[],
    )


def enqueued_results(
    task: compat.Task,
    backend_alias: str,
    rows: Sequence[tuple[int, object]],
    calls: Sequence[tuple[Sequence[Any], Mapping[str, Any]]],
) -> list[compat.TaskResult]:
    """``enqueued_result`` for each new row ``(id, created_at)`` and its call's
    ``(args, kwargs)``, in order. Built field by field where ``_SlotSetters``
    allows (a bulk enqueue spent more on Django's constructor than on its rows),
    each result equal to the one the constructor builds."""
    setters = _SlotSetters.get()
    if setters is None:
        return [
            enqueued_result(task, backend_alias, job_id, created_at, args, kwargs)
            for (job_id, created_at), (args, kwargs) in zip(rows, calls, strict=True)
        ]
    return setters.build_all(task, backend_alias, rows, calls)


# Types normalize_json() returns as they are: a flat list of them is its own
# normal form, copied.
_PLAIN = frozenset({str, int, float, bool, type(None)})


def _normal_args(args: Sequence[Any]) -> list[Any]:
    if not args:
        return []
    if all(type(value) in _PLAIN for value in args):
        return list(args)
    return cast(list[Any], compat.normalize_json(args))


def _normal_kwargs(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    if not kwargs:
        return {}
    if all(type(key) is str and type(value) in _PLAIN for key, value in kwargs.items()):
        return dict(kwargs)
    return cast(dict[str, Any], compat.normalize_json(kwargs))


class _SlotSetters:
    """Builds an enqueued ``TaskResult`` by setting its slots directly: what its
    constructor does (``__init__`` sets each field, ``__post_init__`` normalises
    the arguments to JSON types) at a third of the cost. Used only when the class
    is the slotted dataclass it was written against and a sample built both ways
    compares equal; else ``get`` returns None and the constructor builds them."""

    _checked = False
    _instance: _SlotSetters | None = None

    def __init__(self, setters: Mapping[str, Any]) -> None:
        self.set = setters

    @classmethod
    def get(cls) -> _SlotSetters | None:
        if not cls._checked:
            cls._instance = cls._make()
            cls._checked = True
        return cls._instance

    @classmethod
    def _make(cls) -> _SlotSetters | None:
        result_class = compat.TaskResult
        if not dataclasses.is_dataclass(result_class):
            return None
        names = {f.name for f in dataclasses.fields(result_class)}
        if names != _RESULT_FIELDS:
            return None
        setters = {}
        for name in names:
            slot = result_class.__dict__.get(name)
            if not isinstance(slot, types.MemberDescriptorType):
                return None
            setters[name] = slot.__set__
        built = cls(setters)
        task: Any = _SampleTask()
        sample = ((1, "x", 2.5, None), {"a": [1, {"b": (2,)}], "c": True})
        when = datetime(2026, 1, 1, tzinfo=UTC)
        try:
            [made] = built.build_all(task, "a", [(7, when)], [sample])
            same = made == enqueued_result(task, "a", 7, when, *sample)
        except Exception:
            return None
        return built if same else None

    def build_all(
        self,
        task: compat.Task,
        backend_alias: str,
        rows: Sequence[tuple[int, object]],
        calls: Sequence[tuple[Sequence[Any], Mapping[str, Any]]],
    ) -> list[compat.TaskResult]:
        """The enqueued result of each new row ``(id, created_at)`` and its call,
        in order, each slot set directly; the setters are looked up once for the
        batch, not once per result (a bulk enqueue builds thousands)."""
        result_class: Any = compat.TaskResult
        new = object.__new__
        put = self.set
        set_task, set_id, set_status = put["task"], put["id"], put["status"]
        set_enqueued, set_started = put["enqueued_at"], put["started_at"]
        set_finished, set_attempted = put["finished_at"], put["last_attempted_at"]
        set_args, set_kwargs, set_backend = put["args"], put["kwargs"], put["backend"]
        set_errors, set_workers, set_value = put["errors"], put["worker_ids"], put["_return_value"]
        ready = compat.TaskResultStatus.READY
        built = []
        for (job_id, created_at), (args, kwargs) in zip(rows, calls, strict=True):
            result = new(result_class)
            set_task(result, task)
            set_id(result, str(job_id))
            set_status(result, ready)
            set_enqueued(result, created_at if isinstance(created_at, datetime) else None)
            set_started(result, None)
            set_finished(result, None)
            set_attempted(result, None)
            set_args(result, _normal_args(args))
            set_kwargs(result, _normal_kwargs(kwargs))
            set_backend(result, backend_alias)
            set_errors(result, [])
            set_workers(result, [])
            set_value(result, None)
            built.append(result)
        return built


_RESULT_FIELDS = frozenset(
    {
        "task",
        "id",
        "status",
        "enqueued_at",
        "started_at",
        "finished_at",
        "last_attempted_at",
        "args",
        "kwargs",
        "backend",
        "errors",
        "worker_ids",
        "_return_value",
    }
)


class _SampleTask:
    """A stand-in task for the sample ``_SlotSetters`` compares (equality only)."""


def job_to_result(job: Job, task: compat.Task, backend_alias: str) -> compat.TaskResult:
    """Map a job row onto a ``TaskResult`` of ``task``."""
    attempts = list(_attempts(job.attempts))
    status = status_of(job.state)
    worker_ids = [str(a.get("worker_id") or "") for a in attempts]
    if job.state == "running" and job.worker_id:
        worker_ids.append(job.worker_id)
    starts = [t for t in (_when(a.get("started_at")) for a in attempts) if t is not None]
    if job.state == "running" and job.started_at is not None:
        starts.append(job.started_at)
    first_start = min(starts) if starts else job.started_at
    last_start = max(starts) if starts else job.started_at
    finished = status in (compat.TaskResultStatus.SUCCESSFUL, compat.TaskResultStatus.FAILED)
    result: compat.TaskResult[..., Any] = compat.TaskResult(
        task=task_for_job(task, job, backend_alias),
        id=str(job.pk),
        status=status,
        enqueued_at=_aware(job.created_at),
        started_at=first_start,
        finished_at=job.completed_at if finished else None,
        last_attempted_at=last_start,
        args=job.args,
        kwargs=job.kwargs,
        backend=backend_alias,
        errors=[_error(a) for a in attempts if a.get("status") not in _NOT_ERRORS],
        worker_ids=worker_ids,
    )
    if status == compat.TaskResultStatus.SUCCESSFUL:
        # TaskResult is frozen; its own backends set the return value this way too.
        object.__setattr__(result, "_return_value", job.return_value)
    return result


def _attempts(value: object) -> Sequence[Mapping[str, Any]]:
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, Mapping)]


def _error(attempt: Mapping[str, Any]) -> compat.TaskError:
    status = str(attempt.get("status") or "")
    path = str(attempt.get("exception_class") or "") or _UNKNOWN_EXCEPTION.get(
        status, _DEFAULT_EXCEPTION
    )
    traceback = str(attempt.get("traceback") or "") or str(attempt.get("message") or status)
    return compat.TaskError(exception_class_path=path, traceback=traceback)


def _when(value: object) -> datetime | None:
    """An attempt's timestamp, in the same awareness as the model's datetimes so the
    two can be compared."""
    if isinstance(value, str) and value:
        try:
            value = parse_datetime(value)
        except ValueError:
            return None
    if not isinstance(value, datetime):
        return None
    if settings.USE_TZ and timezone.is_naive(value):
        return timezone.make_aware(value, UTC)
    if not settings.USE_TZ and timezone.is_aware(value):
        return timezone.make_naive(value)
    return value


def _aware(value: object) -> datetime | None:
    return value if isinstance(value, datetime) else None
