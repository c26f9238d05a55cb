"""A job definition: a ``django.tasks`` Task carrying the seed's ``Options``.

``DispatchTask`` is the backend's ``task_class``. Define jobs with ``@dispatch_jobs.task``
(works the same on Django 5.2, 6.0 and 6.1) or, on Django 6.1, with ``@django.tasks.task``
(on 5.2, the backport's ``@django_tasks.task``), which forwards extra keyword arguments to
the backend's ``task_class``::

    @task(max_retries=5, timeout=timedelta(minutes=1), resources={"memory": "2Gi"})
    def resize(image_id: int) -> None: ...

Options are checked and resource quantities parsed into canonical units when the task
is defined, so a typo fails at import time, not in a worker hours later.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from functools import partial
from typing import Any

from asgiref.sync import sync_to_async
from django.db import transaction

from . import compat, limits, names, rungs, task_options
from . import inputs as input_specs
from .conf import settings
from .exceptions import DispatchJobsError
from .resources import ResourceSet, default_limits
from .scope import Scope
from .task_options import CanonicalResources

EXECUTION_IN_PROCESS = rungs.IN_PROCESS
# The isolation levels some worker can provide (``rungs``). A declared policy is a
# minimum, so one no worker implements is refused at definition rather than run
# with less.
EXECUTION_POLICIES = rungs.RUNGS
ALIAS_MAX = limits.NAME_MAX
EXECUTION_MAX = limits.EXECUTION_MAX
RESOURCE_CLASS_MAX = limits.RESOURCE_CLASS_MAX

# What ``using()`` accepts, besides nothing else: Django's four and the seed's three.
PER_ENQUEUE_OPTIONS = (
    "priority",
    "queue_name",
    "run_after",
    "backend",
    "resources",
    "lease_ttl",
    "scope",
    "inputs",
    "execution",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class _TaskOptions(compat.Task):
    """The seed's ``Options`` as Task fields; see ``DispatchTask``."""

    # Retries after the first attempt before the job goes to ``failed`` (dead letter).
    max_retries: int = field(default_factory=lambda: settings.default_max_retries)
    # Longest one attempt may run; ``None`` means no limit.
    timeout: timedelta | None = field(default_factory=lambda: settings.default_timeout)
    # Liveness window of each lease renewal; ``None`` means the worker's default.
    lease_ttl: timedelta | None = None
    # Requests (the floor), canonical units. Readable units accepted: "2Gi", "500m".
    resources: ResourceSet = field(default_factory=dict, hash=False)
    # Enforcement ceiling. Unset incompressible keys default to the request.
    resource_limits: ResourceSet = field(default_factory=dict, hash=False)
    # Called once per enqueue, in the enqueuing process, with the job's arguments;
    # returns a resource mapping that may raise the declared floor.
    resource_func: Callable[..., Mapping[str, object] | None] | None = None
    # Opaque class forwarded to the isolation backend.
    resource_class: str = ""
    # Minimum isolation the handler needs.
    execution: str = EXECUTION_IN_PROCESS
    # Stable name stored on rows instead of the import path (survives renames).
    alias: str = ""
    # Retry backoff: base * 2**retry, capped, with jitter. ``None``: worker defaults.
    retry_backoff_base: timedelta | None = None
    retry_backoff_cap: timedelta | None = None
    # Exceptions that fail the job at once, with no retry (besides ``Permanent``).
    permanent_exceptions: tuple[type[BaseException] | str, ...] = ()
    # Declared artifact inputs (``inputs.InputSpec``), staged before the handler runs.
    inputs: tuple[input_specs.InputSpec, ...] = ()
    # Raise the declared floor from measured usage at enqueue (docs/how-to/estimates.md);
    # ``None``: DISPATCH_JOBS["ESTIMATE_RESOURCES"] decides.
    estimate: bool | None = None
    # Per-enqueue overrides, set through ``using()`` only.
    resource_overrides: ResourceSet = field(default_factory=dict, hash=False)
    scope: Scope | None = None
    input_bindings: Mapping[str, int] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        _normalise(self)
        # Explicit base call: zero-argument super() breaks in slots dataclasses.
        compat.Task.__post_init__(self)
        if self.alias:
            try:
                names.register_alias(self.alias, self.module_path)
            except DispatchJobsError as exc:
                raise compat.InvalidTask(f"Task {self.module_path}: {exc}") from exc


_FIELDS = frozenset(f.name for f in dataclasses.fields(_TaskOptions))
_DEFINITION_OPTIONS = sorted(
    (_FIELDS - {"func", "run_after", "resource_overrides", "scope", "input_bindings"}) | {"name"}
)


class DispatchTask(_TaskOptions):
    """A task the dispatch_jobs backend runs, with the seed's job options.

    Besides Django's ``priority``, ``queue_name``, ``backend`` and ``takes_context``:

    ``max_retries`` (default ``DEFAULT_MAX_RETRIES``, 3), ``timeout`` (default
    ``DEFAULT_TIMEOUT``, 5 minutes; a ``timedelta`` or seconds), ``lease_ttl``,
    ``resources`` and ``resource_limits`` (``{"cpu": "500m", "memory": "2Gi"}``),
    ``resource_func``, ``resource_class``, ``execution`` (``"in-process"``, the
    default, or ``"subprocess"``: the least isolation the handler needs; see ``rungs``),
    ``name``/``alias`` (a stable name stored on job rows), ``retry_backoff_base``,
    ``retry_backoff_cap``, ``permanent_exceptions``, ``inputs`` (a list of
    ``InputSpec``) and ``estimate``.
    """

    __slots__ = ()

    def __init__(self, **kwargs: Any) -> None:
        func = kwargs.get("func")
        if "name" in kwargs:
            # ``name`` is Django's read-only property (the function's name); the
            # stable alias is stored as ``alias``.
            if kwargs.get("alias"):
                raise compat.InvalidTask(
                    f"Task {task_options.describe(func)}: give name= or alias=, not both."
                )
            kwargs["alias"] = kwargs.pop("name")
        unknown = sorted(set(kwargs) - _FIELDS)
        if unknown:
            raise compat.InvalidTask(
                f"Task {task_options.describe(func)}: unknown option "
                f"{', '.join(map(repr, unknown))}. "
                f"Known options: {', '.join(_DEFINITION_OPTIONS)}."
            )
        super().__init__(**kwargs)

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickle by reference to the module-level task (as Django 6.1 does; 6.0's
        # Task cannot be pickled at all, since its function's name is the Task).
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        values["func"] = self.module_path
        return (_reconstruct, (type(self), values))

    @property
    def job_name(self) -> str:
        """What job rows store: the stable alias when declared, else the import path."""
        return self.alias or self.module_path

    def using(
        self,
        *,
        priority: int | None = None,
        queue_name: str | None = None,
        run_after: Any = None,
        backend: str | None = None,
        resources: Mapping[str, object] | None = None,
        lease_ttl: timedelta | float | None = None,
        scope: Scope | tuple[str, str] | Mapping[str, str] | None = None,
        inputs: Mapping[str, Any] | None = None,
        execution: str | None = None,
        **unknown: Any,
    ) -> DispatchTask:
        """A copy with per-enqueue overrides: Django's four, plus ``resources``
        (replaces the resolved requirement key by key), ``lease_ttl``, ``scope``
        (a ``Scope``, ``(app_id, org_id)`` or ``{"app_id": ..., "org_id": ...}``),
        ``inputs`` (declared input names to ``Artifact`` rows or their ids) and
        ``execution`` (the least isolation this call needs: ``"subprocess"``)."""
        if unknown:
            raise compat.InvalidTask(
                f"Task {self.module_path}: unknown option "
                f"{', '.join(map(repr, sorted(unknown)))} for using(). "
                f"Known: {', '.join(PER_ENQUEUE_OPTIONS)}."
            )
        changes: dict[str, Any] = {}
        for key, value in (
            ("priority", priority),
            ("queue_name", queue_name),
            ("run_after", run_after),
            ("backend", backend),
            ("lease_ttl", lease_ttl),
            ("execution", execution),
        ):
            if value is not None:
                changes[key] = value
        if resources is not None:
            parsed = task_options.resources_option(self.func, "resources", resources)
            changes["resource_overrides"] = CanonicalResources(
                {**self.resource_overrides, **parsed}
            )
        if scope is not None:
            changes["scope"] = task_options.to_scope(self.func, scope)
        if inputs is not None:
            changes["input_bindings"] = inputs
        return dataclasses.replace(self, **changes)

    def resolve_resources(
        self,
        args: Sequence[Any],
        kwargs: Mapping[str, Any],
        estimated: Mapping[str, int] | None = None,
    ) -> tuple[ResourceSet, ResourceSet]:
        """The seed's resolution, once, at enqueue: the declared floor, raised key by
        key by ``resource_func(*args, **kwargs)`` and by the ``estimated`` amounts
        (``dispatch_jobs.estimates``), then replaced key by key by the per-enqueue
        override. Returns ``(requests, limits)`` in canonical units."""
        requests = dict(self.resources)
        if self.resource_func is not None:
            try:
                computed = self.resource_func(*args, **kwargs)
            except Exception as exc:
                raise compat.InvalidTask(
                    f"Task {self.module_path}: resource_func raised {type(exc).__name__}: {exc}"
                ) from exc
            for key, amount in task_options.resources_option(
                self.func, "resource_func result", computed
            ).items():
                requests[key] = max(requests.get(key, 0), amount)
        for key, amount in (estimated or {}).items():
            requests[key] = max(requests.get(key, 0), amount)
        requests.update(self.resource_overrides)
        if self.resource_func is not None:
            task_options.custom_keys(self.func, "resources", requests)
        limits = default_limits(requests, self.resource_limits)
        for key, limit in limits.items():
            if key in requests and requests[key] > limit:
                raise compat.InvalidTask(
                    f"Task {self.module_path}: resource {key!r} requests {requests[key]} "
                    f"but its limit is {limit} (canonical units)."
                )
        return requests, limits

    def enqueue_many(
        self, calls: Iterable[tuple[Sequence[Any], Mapping[str, Any]]]
    ) -> list[compat.TaskResult]:
        """Enqueue one job per ``(args, kwargs)`` pair in a single INSERT. Every call
        is validated before any row is written."""
        backend = self.get_backend()
        # Each call as a list or tuple of arguments and a dict of keywords; those
        # already so are taken as they are (a copy per call cost a bulk enqueue
        # more than its check: the payload is encoded from them at once, and the
        # results copy what they keep).
        pairs = [
            (args, kwargs)
            if type(args) in _ARGUMENT_TYPES and type(kwargs) is dict
            else (list(args), dict(kwargs))
            for args, kwargs in calls
        ]
        if hasattr(backend, "enqueue_many"):
            return backend.enqueue_many(self, pairs)
        return [backend.enqueue(self, list(args), dict(kwargs)) for args, kwargs in pairs]

    async def aenqueue_many(
        self, calls: Iterable[tuple[Sequence[Any], Mapping[str, Any]]]
    ) -> list[compat.TaskResult]:
        """See ``enqueue_many()``."""
        pairs = list(calls)
        return await sync_to_async(self.enqueue_many, thread_sensitive=True)(pairs)

    def enqueue_on_commit(self, *args: Any, **kwargs: Any) -> None:
        """Enqueue when the current transaction commits (never, if it rolls back).

        Everything ``enqueue`` checks is checked now (arguments, options, scope,
        resources), so a bad call raises here, at the call site, and never inside
        the commit, where the job would be lost after the caller's transaction
        committed. The row written at commit is the one checked now: payload,
        scope and resources as they were at this call. Outside a transaction the
        job is enqueued at once.
        """
        backend = self.get_backend()
        if hasattr(backend, "enqueue_on_commit"):
            backend.enqueue_on_commit(self, args, kwargs)
            return
        if hasattr(backend, "validate_arguments"):
            backend.validate_arguments(self, args, kwargs)
        transaction.on_commit(partial(self.enqueue, *args, **kwargs), using=settings.database)


_ARGUMENT_TYPES = (list, tuple)


def task(
    function: Callable[..., Any] | None = None,
    *,
    priority: int = compat.DEFAULT_TASK_PRIORITY,
    queue_name: str = compat.DEFAULT_TASK_QUEUE_NAME,
    backend: str = compat.DEFAULT_TASK_BACKEND_ALIAS,
    takes_context: bool = False,
    **options: Any,
) -> Any:
    """Define a job: ``django.tasks.task`` plus the dispatch_jobs options.

    Behaves the same on Django 6.0 (whose decorator takes no extra options), 6.1 and
    5.2 with the backport.
    Use as ``@task`` or ``@task(max_retries=5, name="send-email")``.
    """
    if "run_after" in options:
        raise TypeError(
            "run_after cannot be defined statically with the @task decorator. "
            "Use .using(run_after=...) to set it dynamically."
        )

    def wrapper(func: Callable[..., Any]) -> Any:
        task_class = compat.task_backends[backend].task_class
        if options and not issubclass(task_class, DispatchTask):
            raise compat.InvalidTask(
                f"Task {task_options.describe(func)}: backend {backend!r} does not run "
                f"dispatch_jobs tasks, so options {', '.join(sorted(options))} cannot apply."
            )
        return task_class(
            func=func,
            priority=priority,
            queue_name=queue_name,
            backend=backend,
            # Django 6.0's Task has no default for run_after; 6.1's default is None.
            run_after=None,
            takes_context=takes_context,
            **options,
        )

    if function is not None:
        return wrapper(function)
    return wrapper


def _reconstruct(cls: type[DispatchTask], values: dict[str, Any]) -> DispatchTask:
    from django.utils.module_loading import import_string

    values["func"] = import_string(values["func"]).func
    return cls(**values)


def _normalise(t: _TaskOptions) -> None:
    """Check every option and store it in its canonical form. Runs for every
    instance, including the copies ``using()`` makes, so it must be idempotent."""
    where = f"Task {task_options.describe(t.func)}"
    task_options.set_option(t, "max_retries", task_options.retries(where, t.max_retries))
    task_options.set_option(t, "timeout", task_options.duration(where, "timeout", t.timeout))
    task_options.set_option(t, "lease_ttl", task_options.duration(where, "lease_ttl", t.lease_ttl))
    task_options.set_option(
        t,
        "retry_backoff_base",
        task_options.duration(where, "retry_backoff_base", t.retry_backoff_base),
    )
    task_options.set_option(
        t,
        "retry_backoff_cap",
        task_options.duration(where, "retry_backoff_cap", t.retry_backoff_cap),
    )
    base, cap = t.retry_backoff_base, t.retry_backoff_cap
    if base is not None and cap is not None and cap < base:
        raise compat.InvalidTask(
            f"{where}: retry_backoff_cap ({cap}) is shorter than retry_backoff_base ({base})."
        )
    task_options.set_option(
        t, "resources", task_options.resources_option(t.func, "resources", t.resources)
    )
    task_options.set_option(
        t,
        "resource_limits",
        task_options.resources_option(t.func, "resource_limits", t.resource_limits),
    )
    task_options.set_option(
        t,
        "resource_overrides",
        task_options.resources_option(t.func, "resources", t.resource_overrides),
    )
    # Overrides replace the declared floor key by key: the union is what resolves
    # (a resource_func may add keys: those are counted again at enqueue).
    task_options.custom_keys(t.func, "resources", {**t.resources, **t.resource_overrides})
    if t.resource_func is not None and not callable(t.resource_func):
        raise compat.InvalidTask(
            f"{where}: resource_func must be callable, got {t.resource_func!r}."
        )
    task_options.text(where, "resource_class", t.resource_class, RESOURCE_CLASS_MAX, empty_ok=True)
    task_options.text(where, "execution", t.execution, EXECUTION_MAX, empty_ok=False)
    if t.execution not in EXECUTION_POLICIES:
        raise compat.InvalidTask(
            f"{where}: execution {t.execution!r} is not a rung any worker provides "
            f"(available: {', '.join(EXECUTION_POLICIES)})."
        )
    task_options.text(where, "alias (name=)", t.alias, ALIAS_MAX, empty_ok=True)
    task_options.set_option(
        t, "permanent_exceptions", task_options.exception_classes(where, t.permanent_exceptions)
    )
    if t.scope is not None and not isinstance(t.scope, Scope):
        task_options.set_option(t, "scope", task_options.to_scope(t.func, t.scope))
    task_options.set_option(t, "inputs", input_specs.check_declared(where, t.inputs))
    task_options.set_option(
        t, "input_bindings", input_specs.check_bindings(where, t.inputs, t.input_bindings)
    )
    if t.estimate is not None and not isinstance(t.estimate, bool):
        raise compat.InvalidTask(f"{where}: estimate must be True, False or None.")
