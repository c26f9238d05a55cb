"""The ``TaskResult`` the worker's signals carry, who sends them, and when a
send can be skipped."""

from __future__ import annotations

import logging
import weakref

from django.dispatch import Signal

from ..compat import (
    DEFAULT_TASK_BACKEND_ALIAS,
    TASKS_LOGGER_NAME,
    Task,
    TaskResult,
    task_backends,
)
from ..models import Job
from ..results import job_to_result


def task_result(job: Job, task: Task) -> TaskResult:
    """The job as a ``django.tasks.TaskResult`` (status by the row's state)."""
    return job_to_result(job, task, task.backend)


def backend_class(task: Task) -> type:
    """The signals' sender: the class of the task's backend (Django's contract)."""
    alias = task.backend
    try:
        return type(task_backends[alias])
    except Exception:  # noqa: BLE001 - an alias no longer configured: use the default's
        return type(task_backends[DEFAULT_TASK_BACKEND_ALIAS])


def has_effect(signal: Signal, logging_receiver: object, level: int = logging.INFO) -> bool:
    """Whether sending ``signal`` could do anything: False only when its one
    receiver is ``logging_receiver`` (Django's own, which logs each task on the
    tasks logger, ``django.tasks``, at ``level``: INFO for a start or a finish,
    DEBUG for an enqueue) and that logger drops records of that level.

    Building the ``TaskResult`` a send carries costs more than running a no-op
    job, and the worker sends two per job; when nobody would see them, it skips
    both. Anything else connected (or a receiver list this cannot read) means
    the signal is sent, as Django specifies.
    """
    try:
        receivers = [entry[1] for entry in signal.receivers]
    except (AttributeError, IndexError, TypeError):
        return True
    if len(receivers) != 1:
        return True
    receiver = receivers[0]
    if isinstance(receiver, weakref.ReferenceType):
        receiver = receiver()
    return receiver is not logging_receiver or _TASKS_LOGGER.isEnabledFor(level)


_TASKS_LOGGER = logging.getLogger(TASKS_LOGGER_NAME)
