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
import functools
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from django.apps import apps
from django.conf import settings as django_settings
from django.core.checks import CheckMessage, Error

from . import compat, names
from .conf import settings
from .results import job_to_result, parse_result_id
from .scope import current_scope
from .task import DispatchTask
from .validation import (
    aware_run_after,
    check_arguments,
    check_schedulable,
    check_scope,
    check_task_fields,
    live_window,
)

if TYPE_CHECKING:
    from .models import Job

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
        from . import store

        job = self._build_job(task, args, kwargs, self._capacities_for([task], [(args, kwargs)]))
        store.enqueue_job(job)
        return self._enqueued(job, task)

    def enqueue_many(
        self, task: compat.Task, calls: Sequence[tuple[Sequence[Any], Mapping[str, Any]]]
    ) -> list[compat.TaskResult]:
        """Write one job per ``(args, kwargs)`` in a single INSERT, in the caller's
        transaction. Every call is validated before any row is written."""
        from . import store

        capacities = self._capacities_for([task], calls)
        self.validate_task(task)  # once for the batch: it is the same task each time
        cap = settings.max_payload_bytes  # once for the batch: a settings read is costly
        jobs = [
            self._build_job(
                task, args, kwargs, capacities, task_validated=True, max_payload_bytes=cap
            )
            for args, kwargs in calls
        ]
        created = store.enqueue_jobs(jobs)
        return [self._enqueued(job, task) for job in created]

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
        except names.TaskNotFound as exc:
            raise compat.TaskResultDoesNotExist(
                f"Job {job_id} exists but its task cannot be loaded: {exc}"
            ) from exc
        return job_to_result(job, task, self.alias)

    def check(self, **kwargs: Any) -> list[CheckMessage]:
        """The app is installed, the database can claim safely, OPTIONS are known."""
        from .checks import _check_database

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
        if settings.database in django_settings.DATABASES:
            errors += _check_database(settings.database)
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

    def _build_job(
        self,
        task: compat.Task,
        args: Sequence[Any],
        kwargs: Mapping[str, Any],
        capacities: Sequence[Mapping[str, int]],
        *,
        task_validated: bool = False,
        max_payload_bytes: int | None = None,
    ) -> Job:
        """Validate one call and build its unsaved row. Raises before any write."""
        definition = _as_dispatch_task(task)
        if not task_validated:
            self.validate_task(definition)
        check_arguments(definition, args, kwargs, max_payload_bytes)
        scope = definition.scope or current_scope()
        check_scope(definition, scope)
        requests, limits = definition.resolve_resources(args, kwargs)
        check_schedulable(definition, requests, capacities)
        fields: dict[str, Any] = dict(
            name=definition.job_name,
            queue=definition.queue_name,
            payload={"args": list(args), "kwargs": dict(kwargs)},
            priority=int(definition.priority),
            max_retries=definition.max_retries,
            timeout=definition.timeout,
            lease_ttl=definition.lease_ttl,
            resources=dict(requests),
            resource_limits=dict(limits),
            resource_class=definition.resource_class,
            execution=definition.execution,
            scope_app_id=scope.app_id,
            scope_org_id=scope.org_id,
        )
        run_at = aware_run_after(definition)
        if run_at is not None:
            # Omitted otherwise: the column's default is the database's now.
            fields["run_at"] = run_at
        return _new_job(fields)

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

    def _enqueued(self, job: Job, task: compat.Task) -> compat.TaskResult:
        result = job_to_result(job, task, self.alias)
        # Django's contract: the sender is the backend class.
        compat.task_enqueued.send(type(self), task_result=result)
        return result


def _new_job(values: Mapping[str, Any]) -> Job:
    """``Job(**values)`` through the model's positional constructor, which skips
    the keyword path's per-field lookups: several times cheaper, and enqueue_many
    builds one row per call."""
    from .models import Job

    row = [
        values[name] if name in values else (make() if make else constant)
        for name, make, constant in _layout()
    ]
    # cast: the stubs type the constructor's keyword form only.
    return cast(Any, Job)(*row)


@functools.cache
def _layout() -> tuple[tuple[str, Callable[[], Any] | None, Any], ...]:
    """(name, default factory, constant default) per concrete field of Job, in
    constructor order. A callable default (dict, list) is called per row, as the
    model does; any other default is the same value every time, so it is read
    once (the model hands out the same object too)."""
    from .models import Job

    layout = []
    for field in Job._meta.concrete_fields:
        if field.has_default() and callable(field.default):
            layout.append((field.attname, field.default, None))
        else:
            layout.append((field.attname, None, field.get_default()))
    return tuple(layout)


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
    )


def _label(task: compat.Task) -> str:
    func = getattr(task, "func", None)
    module = getattr(func, "__module__", None)
    qualname = getattr(func, "__qualname__", None)
    return f"{module}.{qualname}" if module and qualname else repr(func)
