"""Periodic schedules declared in code: ``@periodic`` on a task, and the entries of
``DISPATCH_JOBS["SCHEDULES"]``. Both become ``ScheduleSpec`` values, checked when
declared; every worker syncs them into the ``Schedule`` table when it starts
(``store.sync_schedules``), leaving each schedule's enabled flag to the operator.

::

    @periodic(cron="0 2 * * *", timezone="Europe/Paris")
    @task
    def nightly_report() -> None: ...

    DISPATCH_JOBS = {"SCHEDULES": {
        "purge-carts": {"task": "shop.tasks.purge_carts", "every": timedelta(minutes=10)},
    }}
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, TypedDict, TypeVar, Unpack

from . import limits
from .conf import settings
from .exceptions import InvalidSchedule
from .ticks import MissedTicks, check_cron, check_interval, check_zone

T = TypeVar("T")

NAME_MAX = 200
# A schedule's definition: what a sync writes over an existing row (never
# ``enabled``, the operator's), and what the admin shows read-only for a code one.
DEFINITION = (
    "task",
    "cron",
    "interval",
    "timezone",
    "args",
    "kwargs",
    "queue",
    "priority",
    "missed",
)


@dataclass(frozen=True, kw_only=True)
class ScheduleSpec:
    """A checked schedule declaration. ``definition()`` is what a sync writes over
    an existing row; ``enabled`` is only the initial state of a new one."""

    name: str
    task: str
    cron: str = ""
    interval: timedelta | None = None
    timezone: str = "UTC"
    args: list[Any] = field(default_factory=list)
    kwargs: dict[str, Any] = field(default_factory=dict)
    queue: str = ""
    priority: int | None = None
    missed: str = MissedTicks.LATEST
    enabled: bool = True

    def definition(self) -> dict[str, Any]:
        return {name: copy.copy(getattr(self, name)) for name in DEFINITION}


class ScheduleOptions(TypedDict, total=False):
    """The options of a declaration (``@periodic``, a SCHEDULES entry): one of
    ``cron`` and ``every``, and the rest with the defaults ``make_spec`` gives."""

    cron: str
    every: timedelta
    timezone: str  # "UTC"
    args: Sequence[Any]  # ()
    kwargs: Mapping[str, Any]  # {}
    queue: str  # "": the task's
    priority: int | None  # None: the task's
    missed: str  # "latest"
    enabled: bool  # True


OPTIONS = frozenset(ScheduleOptions.__annotations__)


def make_spec(name: str, task: str, **options: Unpack[ScheduleOptions]) -> ScheduleSpec:
    """A checked ``ScheduleSpec``; ``InvalidSchedule`` naming the schedule and its
    problem otherwise."""
    where = f"Schedule {name!r}"
    unknown = sorted(set(options) - OPTIONS)
    if unknown:
        raise InvalidSchedule(
            f"{where}: unknown option {', '.join(map(repr, unknown))}; "
            f"known options: {', '.join(sorted(OPTIONS))}."
        )
    cron, every = options.get("cron"), options.get("every")
    timezone, missed = options.get("timezone", "UTC"), options.get("missed", MissedTicks.LATEST)
    args, kwargs = options.get("args", ()), options.get("kwargs") or {}
    queue, priority = options.get("queue", ""), options.get("priority")
    if not isinstance(name, str) or not name or len(name) > NAME_MAX:
        raise InvalidSchedule(
            f"{where}: the name must be a non-empty string of at most {NAME_MAX} chars."
        )
    if (cron is None) == (every is None):
        raise InvalidSchedule(f"{where}: give exactly one of cron= and every=.")
    try:
        text = check_cron(cron) if cron is not None else ""
        interval = check_interval(every) if every is not None else None
        check_zone(timezone)
    except InvalidSchedule as exc:
        raise InvalidSchedule(f"{where}: {exc}") from exc
    if missed not in MissedTicks.values:
        raise InvalidSchedule(
            f"{where}: missed must be one of {MissedTicks.values}, got {missed!r}."
        )
    if not isinstance(args, (list, tuple)) or not isinstance(kwargs, Mapping):
        raise InvalidSchedule(f"{where}: args must be a list and kwargs a mapping.")
    if priority is not None and (isinstance(priority, bool) or not isinstance(priority, int)):
        raise InvalidSchedule(f"{where}: priority must be an integer, got {priority!r}.")
    if not isinstance(queue, str) or len(queue) > limits.QUEUE_MAX:
        raise InvalidSchedule(
            f"{where}: queue must be a string of at most {limits.QUEUE_MAX} chars."
        )
    return ScheduleSpec(
        name=name,
        task=str(task),
        cron=text,
        interval=interval,
        timezone=str(timezone),
        args=list(args),
        kwargs=dict(kwargs),
        queue=queue,
        priority=priority,
        missed=str(missed),
        enabled=bool(options.get("enabled", True)),
    )


_declared: dict[str, ScheduleSpec] = {}


def periodic(*, name: str = "", **options: Unpack[ScheduleOptions]) -> Callable[[T], T]:
    """Run the decorated task at every tick of ``cron`` (five fields, read in
    ``timezone``) or of ``every`` (a timedelta). Put it above ``@task``. The
    schedule is named ``name`` (default: the task's stored name) and enqueues
    ``task(*args, **kwargs)`` on ``queue`` with ``priority`` (default: the task's).
    ``missed``: ``"latest"`` fires once for the latest tick missed while no worker
    was up, ``"skip"`` fires none of them. ``enabled`` is a new schedule's state
    only: the operator's choice in the admin is kept across deploys."""

    def wrapper(task: T) -> T:
        job_name = getattr(task, "job_name", None)
        if not isinstance(job_name, str):
            raise InvalidSchedule(
                f"@periodic decorates a task: put it above @task, not on {task!r}."
            )
        spec = make_spec(name or job_name, job_name, **options)
        existing = _declared.get(spec.name)
        if existing is not None and existing.task != spec.task:
            raise InvalidSchedule(
                f"Schedule {spec.name!r} is declared twice (for {existing.task!r} and "
                f"{spec.task!r}): give one of them name=."
            )
        _declared[spec.name] = spec
        return task

    return wrapper


def settings_schedules() -> list[ScheduleSpec]:
    """The ``DISPATCH_JOBS["SCHEDULES"]`` entries, checked."""
    entries = settings.schedules
    if not isinstance(entries, Mapping):
        raise InvalidSchedule(
            'DISPATCH_JOBS["SCHEDULES"] must be a dict of name -> entry, '
            f"got {type(entries).__name__}."
        )
    specs = []
    for name, entry in entries.items():
        if not isinstance(entry, Mapping) or "task" not in entry:
            raise InvalidSchedule(f"Schedule {name!r}: an entry is a dict with at least 'task'.")
        options = {key: value for key, value in entry.items() if key != "task"}
        specs.append(make_spec(name, entry["task"], **options))
    return specs


def declared_schedules() -> list[ScheduleSpec]:
    """Every schedule declared in code: the ``@periodic`` ones this process has
    imported and the settings' entries (which win on a shared name)."""
    specs = dict(_declared)
    specs.update((spec.name, spec) for spec in settings_schedules())
    return sorted(specs.values(), key=lambda spec: spec.name)
