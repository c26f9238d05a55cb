"""Every import from ``django.tasks`` lives here, so supporting Django 5.2 through
the ``django-tasks`` backport later is a change to this one module."""

from django.tasks import (  # noqa: F401
    DEFAULT_TASK_BACKEND_ALIAS,
    DEFAULT_TASK_QUEUE_NAME,
    Task,
    TaskContext,
    TaskResult,
    TaskResultStatus,
    default_task_backend,
    task_backends,
)
from django.tasks import signals as _signals
from django.tasks.backends.base import BaseTaskBackend  # noqa: F401
from django.tasks.base import (  # noqa: F401
    DEFAULT_TASK_PRIORITY,
    TASK_MAX_PRIORITY,
    TASK_MIN_PRIORITY,
    TaskError,
)
from django.tasks.exceptions import (  # noqa: F401
    InvalidTask,
    InvalidTaskBackend,
    TaskResultDoesNotExist,
    TaskResultMismatch,
)
from django.tasks.signals import task_enqueued, task_finished, task_started  # noqa: F401

# Django's own receivers, which log every task (the worker skips a send that only
# they would hear while their logger is quiet).
log_task_started = getattr(_signals, "log_task_started", None)
log_task_finished = getattr(_signals, "log_task_finished", None)
