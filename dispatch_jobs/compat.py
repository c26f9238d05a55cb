"""Every import from ``django.tasks`` lives here, so the rest of the package runs
unchanged on Django 6.x (``django.tasks``) and on Django 5.2 LTS, through the
``django-tasks`` backport (``django_tasks``, 0.12: the first release whose API is
Django 6.0's — ``SUCCESSFUL``, ``DEFAULT_TASK_PRIORITY``, no result metadata).

What differs on the backport, and is evened out here: its exceptions end in
``Error`` (``InvalidTaskError``), its logger is ``django_tasks``, ``normalize_json``
sits in its ``utils``, and its checks and logging receivers are only wired when
its app is installed (importing them below wires them without that).
"""

from typing import TYPE_CHECKING

import django
from django.core.exceptions import ImproperlyConfigured

# Type-checked against Django 6's module, which the backport mirrors.
if TYPE_CHECKING or django.VERSION >= (6, 0):
    from django.tasks import (  # noqa: F401
        DEFAULT_TASK_BACKEND_ALIAS,
        DEFAULT_TASK_QUEUE_NAME,
        Task,
        TaskContext,
        TaskResult,
        TaskResultStatus,
        default_task_backend,
        task,
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
    from django.utils.json import normalize_json  # noqa: F401

    # The logger Django's own receivers write every task to.
    TASKS_LOGGER_NAME = "django.tasks"
else:
    try:
        import django_tasks as _backport
    except ImportError as exc:
        raise ImproperlyConfigured(
            f"dispatch_jobs on Django {django.get_version()} needs the django-tasks backport "
            "(Django 6.0 has the tasks framework built in): "
            'pip install "dispatch-jobs[django52]"'
        ) from exc
    if not hasattr(_backport, "TaskResultStatus") or not hasattr(
        _backport.TaskResultStatus, "SUCCESSFUL"
    ):
        raise ImproperlyConfigured(
            "dispatch_jobs needs django-tasks 0.12 (the API of Django 6.0's tasks); "
            'found an older one: pip install "dispatch-jobs[django52]"'
        )
    from django_tasks import (  # noqa: F401
        DEFAULT_TASK_BACKEND_ALIAS,
        DEFAULT_TASK_QUEUE_NAME,
        TaskContext,
        TaskResult,
        TaskResultStatus,
        default_task_backend,
        task,
        task_backends,
    )
    from django_tasks import checks as _checks  # noqa: F401 - registers the backends' checks
    from django_tasks import signals as _signals
    from django_tasks.backends.base import BaseTaskBackend  # noqa: F401
    from django_tasks.base import (  # noqa: F401
        DEFAULT_TASK_PRIORITY,
        TASK_MAX_PRIORITY,
        TASK_MIN_PRIORITY,
        Task,
        TaskError,
    )
    from django_tasks.exceptions import (  # noqa: F401
        InvalidTaskBackendError as InvalidTaskBackend,
    )
    from django_tasks.exceptions import (  # noqa: F401
        InvalidTaskError as InvalidTask,
    )
    from django_tasks.exceptions import (  # noqa: F401
        TaskResultDoesNotExist,
        TaskResultMismatch,
    )
    from django_tasks.signals import task_enqueued, task_finished, task_started  # noqa: F401
    from django_tasks.utils import normalize_json  # noqa: F401

    TASKS_LOGGER_NAME = "django_tasks"

# Django's own receivers, which log every task (the worker skips a send that only
# they would hear while their logger is quiet).
log_task_started = getattr(_signals, "log_task_started", None)
log_task_finished = getattr(_signals, "log_task_finished", None)
log_task_enqueued = getattr(_signals, "log_task_enqueued", None)  # logs at DEBUG
