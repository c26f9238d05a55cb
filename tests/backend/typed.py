"""Test tasks typed as what the backend built.

``tests.jobs.tasks`` defines some tasks with ``@django.tasks.task``, which django-stubs
types as Django's ``Task[P, R]``. Under the dispatch_jobs backend the object is our
``DispatchTask`` (the backend's ``task_class``), with ``using(scope=...)``,
``enqueue_many()`` and the seed's options; this says so, checked at run time.
"""

from __future__ import annotations

from typing import Any

from dispatch_jobs.compat import Task
from dispatch_jobs.task import DispatchTask


def dispatch_task(task: Task[..., Any]) -> DispatchTask:
    """``task``, narrowed to the ``DispatchTask`` the dispatch_jobs backend made."""
    if not isinstance(task, DispatchTask):
        raise TypeError(f"{task!r} was not built by the dispatch_jobs backend")
    return task
