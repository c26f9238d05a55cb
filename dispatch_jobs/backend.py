"""The ``django.tasks`` backend: tasks become job rows, job rows become results.

Configure it through Django's ``TASKS`` setting::

    TASKS = {
        "default": {
            "BACKEND": "dispatch_jobs.backend.DispatchBackend",
            "QUEUES": ["default", "emails"],
        }
    }

It honours every ``supports_*`` flag Django defines: ``run_after`` (defer),
coroutine tasks, priority, and ``get_result`` from any process. The checks of one
call and the columns of its row are ``calls``; the backend writes them.

The store and models are imported inside methods, never at module level: Django
builds backends when the first ``@task`` decorator runs, which is at import time of
a tasks module, possibly before the app registry is ready.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from django.apps import apps
from django.core.checks import CheckMessage, Error
from django.db import transaction

from . import compat, estimates, names, tracing
from .calls import (
    Call,
    call_columns,
    check_calls,
    frozen,
    new_jobs,
    task_columns,
)
from .conf import settings
from .exceptions import TaskNotFound
from .results import enqueued_results, job_to_result, parse_result_id, task_as_enqueued
from .task import DispatchTask
from .validation import check_arguments, check_task_fields, live_window

if TYPE_CHECKING:
    from .models import Job

# The backend takes no OPTIONS of its own: engine settings live in DISPATCH_JOBS.
KNOWN_OPTIONS: frozenset[str] = frozenset()
# Tasks a backend remembers as validated; past it, it starts over (a bound for
# tasks made per call with ``using()``, not a tuning knob).
_VALIDATED_KEPT = 256


class DispatchBackend(compat.BaseTaskBackend):
    """Stores tasks as dispatch_jobs job rows, run by ``manage.py runjobs``."""

    task_class = DispatchTask
    supports_defer = True
    supports_async_task = True
    supports_get_result = True
    supports_priority = True

    def __init__(self, alias: str, params: dict[str, Any]) -> None:
        super().__init__(alias, params)
        # Tasks validated, by id: the task (its id is only its own while it
        # lives), the settings' generation then, and whether it may need
        # resources. A task is frozen and the rules read only it, this backend and
        # settings, so until a setting changes the answers stand; a single
        # enqueue spent about 15 µs asking again.
        self._validated: dict[int, tuple[compat.Task, int, bool]] = {}

    def validate_task(self, task: compat.Task) -> None:
        """Django's rules first, then ours; every error names the task."""
        self._checked(task)

    def _checked(self, task: compat.Task) -> bool:
        """``validate_task``, remembered; whether the task may need resources (then
        an enqueue reads the live workers' capacities)."""
        seen = self._validated.get(id(task))
        if seen is not None and seen[0] is task and seen[1] == settings.generation:
            return seen[2]
        generation = settings.generation
        self._validate(task)
        needs = _may_need_resources(task)
        if len(self._validated) >= _VALIDATED_KEPT:
            self._validated.clear()
        self._validated[id(task)] = (task, generation, needs)
        return needs

    def _validate(self, task: compat.Task) -> None:
        try:
            super().validate_task(task)
        except compat.InvalidTask as exc:
            raise compat.InvalidTask(f"Task {_label(task)}: {exc}") from exc
        except (TypeError, AttributeError):
            # A value of the wrong type made a base rule crash: say which one.
            check_task_fields(task)
            raise
        check_task_fields(task)

    def validate_arguments(
        self, task: compat.Task, args: Sequence[Any], kwargs: Mapping[str, Any]
    ) -> None:
        """Everything ``enqueue`` checks before writing, without writing."""
        self.validate_task(task)
        check_arguments(task, args, kwargs)

    def enqueue(
        self, task: compat.Task, args: Sequence[Any], kwargs: Mapping[str, Any]
    ) -> compat.TaskResult:
        """Write one pending job in the caller's transaction and return its result."""
        definition = _as_dispatch_task(task)
        capacities = self._capacities_for(self._checked(definition), [(args, kwargs)])
        return self._write(task, definition, [(args, kwargs)], capacities)[0]

    def enqueue_many(
        self, task: compat.Task, calls: Sequence[tuple[Sequence[Any], Mapping[str, Any]]]
    ) -> list[compat.TaskResult]:
        """Write one job per ``(args, kwargs)`` in a single INSERT, in the caller's
        transaction. Every call is validated before any row is written."""
        # Validated once for the batch: it is the same task each time.
        capacities = self._capacities_for(self._checked(task), calls)
        return self._write(task, _as_dispatch_task(task), calls, capacities)

    def enqueue_on_commit(
        self, task: compat.Task, args: Sequence[Any], kwargs: Mapping[str, Any]
    ) -> None:
        """Validate the call now, exactly as ``enqueue`` would (arguments, options,
        scope, resources), raising to the caller; write the row when the current
        transaction commits. What is written is what was checked: the payload
        encoded now, the scope of the call's context, the resources resolved now.
        """
        definition = _as_dispatch_task(task)
        capacities = self._capacities_for(self._checked(definition), [(args, kwargs)])
        checked = [frozen(call) for call in check_calls(definition, [(args, kwargs)], capacities)]
        transaction.on_commit(
            partial(self._insert, task, definition, checked), using=settings.database
        )

    def get_result(self, result_id: object) -> compat.TaskResult:
        """The result of a job by id. Unknown or malformed ids raise
        ``TaskResultDoesNotExist``."""
        from . import store
        from .exceptions import JobNotFound
        from .readback import nearest_values

        job_id = parse_result_id(result_id)
        if job_id is None:
            raise compat.TaskResultDoesNotExist(f"{result_id!r} is not a job id.")
        try:
            with nearest_values():  # a stored infinite time reads as the latest one
                job = store.get_job(job_id)
        except JobNotFound as exc:
            raise compat.TaskResultDoesNotExist(f"Job {job_id} does not exist.") from exc
        try:
            task = names.load_task(job.name)
        except TaskNotFound as exc:
            raise compat.TaskResultDoesNotExist(
                f"Job {job_id} exists but its task cannot be loaded: {exc}"
            ) from exc
        return job_to_result(job, task, self.alias)

    def check(self, **kwargs: Any) -> list[CheckMessage]:
        """The app is installed and OPTIONS are known. The job database's checks
        (``dispatch_jobs.W001``/``W002``) run once, from ``checks.check_settings``:
        repeating them here printed each message twice."""
        errors: list[CheckMessage] = []
        if not apps.is_installed("dispatch_jobs"):
            errors.append(
                Error(
                    f"TASKS[{self.alias!r}] uses DispatchBackend but 'dispatch_jobs' is not "
                    "in INSTALLED_APPS, so it has no job table.",
                    hint="Add 'dispatch_jobs' to INSTALLED_APPS and run migrate.",
                    id="dispatch_jobs.E101",
                )
            )
        options = self.options if isinstance(self.options, Mapping) else {}
        for key in sorted(set(options) - KNOWN_OPTIONS):
            errors.append(
                Error(
                    f"TASKS[{self.alias!r}]['OPTIONS'] has an unknown key {key!r}.",
                    hint="DispatchBackend takes no OPTIONS; configure the engine "
                    "through the DISPATCH_JOBS setting.",
                    id="dispatch_jobs.E102",
                )
            )
        return errors

    def _write(
        self,
        task: compat.Task,
        definition: DispatchTask,
        calls: Sequence[tuple[Sequence[Any], Mapping[str, Any]]],
        capacities: Sequence[Mapping[str, int]],
    ) -> list[compat.TaskResult]:
        """Validate every call, write them all in one INSERT, then send
        ``task_enqueued`` for each, with the backend class as sender (Django's
        contract). The task is validated already."""
        return self._insert(task, definition, check_calls(definition, calls, capacities))

    def _insert(
        self, task: compat.Task, definition: DispatchTask, checked: Sequence[Call]
    ) -> list[compat.TaskResult]:
        """Write validated calls in one INSERT and send ``task_enqueued`` for each."""
        from .store import insert_jobs
        from .worker.results import has_effect

        if not checked:
            return []
        with tracing.enqueue_span(definition.job_name, definition.queue_name, len(checked)) as ctx:
            new = new_jobs(definition, checked, ctx)
            created = insert_jobs(new)
        result_task = task_as_enqueued(
            task, new.shared["queue"], new.shared["priority"], self.alias
        )
        sender = type(self)
        # Skipped when only Django's own receiver would hear it and its logger
        # drops DEBUG records (the default): the send cost more than the row.
        send = has_effect(compat.task_enqueued, compat.log_task_enqueued, logging.DEBUG)
        results = enqueued_results(
            result_task, self.alias, created, [(call.args, call.kwargs) for call in checked]
        )
        if send:
            for result in results:
                compat.task_enqueued.send(sender, task_result=result)
        return results

    def _capacities_for(self, may_need: bool, calls: Sequence[Any]) -> list[Mapping[str, int]]:
        """Live workers' capacities, read once per enqueue call, and only when the
        task could need resources (the unschedulable rule has nothing to test
        otherwise)."""
        from . import store

        if not may_need or not calls:
            return []
        return [dict(w.capacity or {}) for w in store.live_workers(live_window())]


def job_of_call(task: compat.Task, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Job:
    """The unsaved row one call of ``task`` writes, checked as ``enqueue`` checks
    it: for a caller that writes the row through the store in its own transaction
    (a schedule's tick, ``store.fire_schedule_tick``)."""
    from .models import Job

    backend = task.get_backend()
    if not isinstance(backend, DispatchBackend):
        raise compat.InvalidTask(
            f"Task {_label(task)} goes to backend {backend.alias!r}, which is not dispatch_jobs'."
        )
    definition = _as_dispatch_task(task)
    capacities = backend._capacities_for(backend._checked(definition), [(args, kwargs)])
    [call] = check_calls(definition, [(args, kwargs)], capacities)
    columns = {**task_columns(definition), **call_columns(call)}
    return Job(payload=call.payload.value, **columns)


def _as_dispatch_task(task: compat.Task) -> DispatchTask:
    """A plain ``Task`` aimed at this backend runs with the default options."""
    if isinstance(task, DispatchTask):
        return task
    values = {f.name: getattr(task, f.name) for f in dataclasses.fields(compat.Task)}
    return DispatchTask(**values)


def _may_need_resources(task: compat.Task) -> bool:
    return bool(
        getattr(task, "resources", None)
        or getattr(task, "resource_func", None)
        or getattr(task, "resource_overrides", None)
        or estimates.wants_estimate(task)
    )


def _label(task: compat.Task) -> str:
    func = getattr(task, "func", None)
    module = getattr(func, "__module__", None)
    qualname = getattr(func, "__qualname__", None)
    return f"{module}.{qualname}" if module and qualname else repr(func)
