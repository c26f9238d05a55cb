"""From a job row's ``name`` back to the task that runs it.

A row stores the task's import path (``myapp.tasks.send_email``) or, when the task
declared one, its stable alias (``name="send-email"``). Aliases are registered
when the task object is created, i.e. when its module is imported.
"""

from __future__ import annotations

from typing import Any

from django.utils.module_loading import import_string

from .exceptions import DispatchJobsError

_aliases: dict[str, str] = {}


class TaskNotFound(DispatchJobsError):
    """A job names a task that cannot be imported (renamed or removed)."""


def register_alias(alias: str, module_path: str) -> None:
    existing = _aliases.get(alias)
    if existing and existing != module_path:
        raise DispatchJobsError(
            f"Task alias {alias!r} is already used by {existing!r}; it cannot also name "
            f"{module_path!r}."
        )
    _aliases[alias] = module_path


def load_task(name: str) -> Any:
    """The Task object a job row names. Raises ``TaskNotFound`` with the reason."""
    path = _aliases.get(name, name)
    try:
        obj = import_string(path)
    except ImportError as exc:
        raise TaskNotFound(
            f"Task {name!r} cannot be imported ({exc}); was it renamed or removed? "
            "Give tasks a stable name= alias to rename them safely."
        ) from exc
    if not hasattr(obj, "func") or not hasattr(obj, "module_path"):
        raise TaskNotFound(f"{path!r} is not a task (decorate the function with @task).")
    return obj
