"""The ``django.tasks`` backend: tasks become job rows, job rows become results.

Configure it through Django's ``TASKS`` setting::

    TASKS = {
        "default": {
            "BACKEND": "dispatch_jobs.backend.DispatchBackend",
            "QUEUES": ["default", "emails"],
        }
    }

It honours every ``supports_*`` flag Django defines: ``run_after`` (defer),
coroutine tasks, priority, and ``get_result`` from any process.

The store and models are imported inside methods, never at module level: Django
builds backends when the first ``@task`` decorator runs, which is at import time of
a tasks module, possibly before the app registry is ready.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, NamedTuple

from django.apps import apps
from django.core.checks import CheckMessage, Error
from django.db import transaction

from . import compat, estimates, inputs, names, tracing
from .conf import settings
from .exceptions import TaskNotFound
from .resources import ResourceSet
from .results import enqueued_result, job_to_result, parse_result_id, task_as_enqueued
from .scope import Scope, current_scope
from .task import DispatchTask
from .validation import (
    aware_run_after,
    check_arguments,
    check_schedulable,
    check_scope,
    check_task_fields,
    encode_arguments,
    live_window,
)

if TYPE_CHECKING:
    from .models import Job
    from .store import EncodedJSON, NewJobs

# The backend takes no OPTIONS of its own: engine settings live in DISPATCH_JOBS.
KNOWN_OPTIONS: frozenset[str] = frozenset()


class DispatchBackend(compat.BaseTaskBackend):
    """Stores tasks as dispatch_jobs job rows, run by ``manage.py runjobs``."""

    task_class = DispatchTask
    supports_defer = True
    supports_async_task = True
    supports_get_result = True
    supports_priority = True

    def validate_task(self, task: compat.Task) -> None:
        """Django's rules first, then ours; every error names the task."""
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
        capacities = self._capacities_for([task], [(args, kwargs)])
        definition = _as_dispatch_task(task)
        self.validate_task(definition)
        return self._write(task, definition, [(args, kwargs)], capacities)[0]

    def enqueue_many(
        self, task: compat.Task, calls: Sequence[tuple[Sequence[Any], Mapping[str, Any]]]
    ) -> list[compat.TaskResult]:
        """Write one job per ``(args, kwargs)`` in a single INSERT, in the caller's
        transaction. Every call is validated before any row is written."""
        capacities = self._capacities_for([task], calls)
        self.validate_task(task)  # once for the batch: it is the same task each time
        return self._write(task, _as_dispatch_task(task), calls, capacities)

    def enqueue_on_commit(
        self, task: compat.Task, args: Sequence[Any], kwargs: Mapping[str, Any]
    ) -> None:
        """Validate the call now, exactly as ``enqueue`` would (arguments, options,
        scope, resources), raising to the caller; write the row when the current
        transaction commits. What is written is what was checked: the payload
        encoded now, the scope of the call's context, the resources resolved now.
        """
        capacities = self._capacities_for([task], [(args, kwargs)])
        definition = _as_dispatch_task(task)
        self.validate_task(definition)
        checked = [
            _frozen(call) for call in self._check_calls(definition, [(args, kwargs)], capacities)
        ]
        transaction.on_commit(
            partial(self._insert, task, definition, checked), using=settings.database
        )

    def get_result(self, result_id: object) -> compat.TaskResult:
        """The result of a job by id. Unknown or malformed ids raise
        ``TaskResultDoesNotExist``."""
        from . import store
        from .exceptions import JobNotFound

        job_id = parse_result_id(result_id)
        if job_id is None:
            raise compat.TaskResultDoesNotExist(f"{result_id!r} is not a job id.")
        try:
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
        return self._insert(task, definition, self._check_calls(definition, calls, capacities))

    def _check_calls(
        self,
        definition: DispatchTask,
        calls: Sequence[tuple[Sequence[Any], Mapping[str, Any]]],
        capacities: Sequence[Mapping[str, int]],
    ) -> list[_Call]:
        """Validate every call (the task is validated already); raises before any
        write."""
        cap = settings.max_payload_bytes  # once: a settings read costs more than a check
        checked: list[_Call] = []
        resolved = None
        bound = _bound_inputs(definition) if calls else {}  # the same for every call
        estimated = _estimated(definition, bound, capacities) if calls else {}
        for args, kwargs in calls:
            call = _check_call(
                definition, args, kwargs, capacities, cap, resolved, bound, estimated
            )
            if definition.resource_func is None:
                # Nothing else varies them: every call resolves the same resources.
                resolved = (call.requests, call.limits)
            checked.append(call)
        return checked

    def _insert(
        self, task: compat.Task, definition: DispatchTask, checked: Sequence[_Call]
    ) -> list[compat.TaskResult]:
        """Write validated calls in one INSERT and send ``task_enqueued`` for each."""
        from .store import insert_jobs
        from .worker.results import has_effect

        if not checked:
            return []
        with tracing.enqueue_span(definition.job_name, definition.queue_name, len(checked)) as ctx:
            new = _new_jobs(definition, checked, ctx)
            created = insert_jobs(new)
        result_task = task_as_enqueued(
            task, new.shared["queue"], new.shared["priority"], self.alias
        )
        sender = type(self)
        # Skipped when only Django's own receiver would hear it and its logger
        # drops DEBUG records (the default): the send cost more than the row.
        send = has_effect(compat.task_enqueued, compat.log_task_enqueued, logging.DEBUG)
        results = []
        for (job_id, created_at), call in zip(created, checked, strict=True):
            result = enqueued_result(
                result_task, self.alias, job_id, created_at, call.args, call.kwargs
            )
            if send:
                compat.task_enqueued.send(sender, task_result=result)
            results.append(result)
        return results

    def _capacities_for(
        self, tasks: Sequence[compat.Task], calls: Sequence[Any]
    ) -> list[Mapping[str, int]]:
        """Live workers' capacities, read once per enqueue call, and only when the
        task could need resources (the unschedulable rule has nothing to test
        otherwise)."""
        from . import store

        if not any(_may_need_resources(t) for t in tasks) or not calls:
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
    backend.validate_task(definition)
    capacities = backend._capacities_for([task], [(args, kwargs)])
    bound = _bound_inputs(definition)
    estimated = _estimated(definition, bound, capacities)
    call = _check_call(
        definition, args, kwargs, capacities, settings.max_payload_bytes, None, bound, estimated
    )
    columns = {**_task_columns(definition), **_call_columns(call)}
    return Job(payload=call.payload.value, **columns)


class _Call(NamedTuple):
    """One validated call: its arguments, their encoded payload, the scope and
    resources it resolved, and the columns of its bound inputs."""

    args: Sequence[Any]
    kwargs: Mapping[str, Any]
    payload: EncodedJSON
    scope: Scope
    requests: ResourceSet
    limits: ResourceSet
    inputs: Mapping[str, Any]


def _check_call(
    definition: DispatchTask,
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    capacities: Sequence[Mapping[str, int]],
    max_payload_bytes: int,
    resolved: tuple[ResourceSet, ResourceSet] | None,
    bound: Mapping[str, Any],
    estimated: Mapping[str, int],
) -> _Call:
    """Validate one call and resolve what it contributes to its row. Raises
    before any write. ``resolved``: the resources of an earlier call, when they
    cannot differ (checked then, in this order)."""
    payload = encode_arguments(definition, args, kwargs, max_payload_bytes)
    scope = definition.scope or current_scope()
    check_scope(definition, scope)
    if resolved is None:
        resolved = definition.resolve_resources(args, kwargs, estimated)
        check_schedulable(definition, resolved[0], capacities)
    return _Call(args, kwargs, payload, scope, *resolved, bound)


def _frozen(call: _Call) -> _Call:
    """A checked call that no later change to the caller's objects can alter: its
    payload as the value decoded from the text that was checked (the ORM path
    stores the value; a list the caller appends to before the commit would
    otherwise be written as it is then, unchecked)."""
    from .store import EncodedJSON

    text = call.payload.text
    payload = json.loads(text)
    return call._replace(
        args=payload["args"], kwargs=payload["kwargs"], payload=EncodedJSON(payload, text)
    )


def _new_jobs(
    definition: DispatchTask, calls: Sequence[_Call], trace_context: dict[str, str] | None
) -> NewJobs:
    """The rows of validated calls, as columns: the task's options are shared by
    every row; each payload is its own; scope and resources are shared unless a
    call differs (a ``resource_func``). The enqueue span's trace context, when
    tracing is on, is shared too (absent otherwise: the column stays NULL)."""
    from .store import NewJobs

    shared = _task_columns(definition)
    if trace_context is not None:
        shared["trace_context"] = trace_context
    own: dict[str, list[Any]] = {"payload": [call.payload for call in calls]}
    first = calls[0]
    decided = (first.scope, first.requests, first.limits)
    if all((call.scope, call.requests, call.limits) == decided for call in calls):
        shared.update(_call_columns(first))
    else:
        rows = [_call_columns(call) for call in calls]
        own.update({attname: [row[attname] for row in rows] for attname in rows[0]})
    return NewJobs(len(calls), shared, own)


def _task_columns(definition: DispatchTask) -> dict[str, Any]:
    """The columns a task's options decide: the same for every call of it."""
    columns: dict[str, Any] = dict(
        name=definition.job_name,
        queue=definition.queue_name,
        priority=int(definition.priority),
        max_retries=definition.max_retries,
        timeout=definition.timeout,
        lease_ttl=definition.lease_ttl,
        resource_class=definition.resource_class,
        execution=definition.execution,
    )
    run_at = aware_run_after(definition)
    if run_at is not None:
        # Omitted otherwise: the column's default is the database's now.
        columns["run_at"] = run_at
    return columns


def _call_columns(call: _Call) -> dict[str, Any]:
    """The columns one call's scope and resolved resources decide."""
    from .store import resource_columns

    columns = resource_columns(call.requests)
    columns["scope_app_id"] = call.scope.app_id
    columns["scope_org_id"] = call.scope.org_id
    columns["resources"] = dict(call.requests)
    columns["resource_limits"] = dict(call.limits)
    columns.update(call.inputs)
    return columns


def _estimated(
    definition: DispatchTask, bound: Mapping[str, Any], capacities: Sequence[Mapping[str, int]]
) -> dict[str, int]:
    """What the usage estimator raises, once per enqueue call (every call of it
    shares the task and its inputs, hence the bucket); {} unless it is wanted."""
    if not estimates.wants_estimate(definition):
        return {}
    found = estimates.estimate_for(definition.job_name, bound.get("input_bytes", 0))
    if found is None:
        return {}
    return estimates.clamp(
        found.as_resources(), definition.resources, definition.resource_limits, capacities
    )


def _bound_inputs(definition: DispatchTask) -> dict[str, Any]:
    """The input columns of the task's bindings, every input rule checked (one
    query, and none when the task declares no inputs)."""
    where = f"Task {definition.module_path}"
    return inputs.resolve(where, definition.inputs, definition.input_bindings)


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
