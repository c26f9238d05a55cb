"""Which queues a worker serves, and why: ``--queue``, else
``DISPATCH_JOBS['WORKER_QUEUES']``, else every queue the ``TASKS`` backends that
are dispatch_jobs backends accept.

A backend's ``QUEUES`` is what Django lets a task enqueue into (``["default"]``
when the key is absent; an empty list lets any queue through), so serving the
union of them serves every job the project can enqueue through ``django.tasks``.
A backend that accepts any queue makes the worker serve every queue.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.utils.module_loading import import_string

from .. import limits
from ..exceptions import QueueNameError


@dataclass(frozen=True)
class ServedQueues:
    """The queues a worker claims from. ``names`` empty means every queue."""

    names: tuple[str, ...]
    source: str  # where they came from, for the start-up line

    @property
    def every(self) -> bool:
        return not self.names

    def describe(self) -> str:
        served = "every queue" if self.every else f"queues {', '.join(self.names)}"
        return f"{served} (from {self.source})"


def parse_queue_names(value: object, option: str) -> tuple[str, ...]:
    """Names from a list of (possibly comma-separated) names; at least one."""
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, Sequence) or not names:
        raise QueueNameError(f"{option}: name at least one queue.")
    result: list[str] = []
    for name in names:
        for part in str(name).split(","):
            part = part.strip()
            if not limits.is_queue_name(part):
                raise QueueNameError(
                    f"{option}: {name!r} is not a queue name ({limits.QUEUE_NAME_RULE})."
                )
            if part not in result:
                result.append(part)
    return tuple(result)


def served_queues(given: object, configured: Sequence[str] | None) -> ServedQueues:
    """``given`` (``--queue`` values, or None), else ``configured``
    (``WORKER_QUEUES``, or None), else the ``TASKS`` backends' queues."""
    if given is not None:
        return ServedQueues(parse_queue_names(given, "--queue"), "--queue")
    if configured is not None:
        names = parse_queue_names(configured, "DISPATCH_JOBS['WORKER_QUEUES']")
        return ServedQueues(names, "DISPATCH_JOBS['WORKER_QUEUES']")
    return queues_from_tasks()


def queues_from_tasks() -> ServedQueues:
    """The union of the dispatch_jobs backends' ``QUEUES`` in ``TASKS``; every
    queue when one of them accepts any queue, or when none is configured (then
    only jobs written through the store exist, in whatever queues they name)."""
    from ..backend import DispatchBackend
    from ..compat import task_backends

    aliases = [
        alias
        for alias, params in task_backends.settings.items()
        if _is_dispatch_backend(params.get("BACKEND"), DispatchBackend)
    ]
    if not aliases:
        return ServedQueues((), "TASKS, which names no DispatchBackend")
    names: set[str] = set()
    for alias in aliases:
        queues = task_backends[alias].queues
        if not queues:
            return ServedQueues((), f"TASKS[{alias!r}], whose QUEUES is empty: any queue")
        names.update(queues)
    where = ", ".join(f"TASKS[{alias!r}]['QUEUES']" for alias in aliases)
    return ServedQueues(parse_queue_names(sorted(names), where), where)


def _is_dispatch_backend(path: object, base: type) -> bool:
    try:
        backend = import_string(path) if isinstance(path, str) else None
    except ImportError:
        return False  # Django's own check reports it; it is not ours to serve
    return isinstance(backend, type) and issubclass(backend, base)
