"""The ``TaskResult`` the worker's signals carry, and who sends them."""

from __future__ import annotations

from typing import Any

from ..compat import DEFAULT_TASK_BACKEND_ALIAS, TaskResult, task_backends
from ..models import Job
from ..results import job_to_result


def task_result(job: Job, task: Any) -> TaskResult:
    """The job as a ``django.tasks.TaskResult`` (status by the row's state)."""
    return job_to_result(job, task, getattr(task, "backend", DEFAULT_TASK_BACKEND_ALIAS))


def backend_class(task: Any) -> type:
    """The signals' sender: the class of the task's backend (Django's contract)."""
    alias = getattr(task, "backend", DEFAULT_TASK_BACKEND_ALIAS)
    try:
        return type(task_backends[alias])
    except Exception:  # noqa: BLE001 - an alias no longer configured: use the default's
        return type(task_backends[DEFAULT_TASK_BACKEND_ALIAS])
