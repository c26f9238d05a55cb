"""From a job row's ``name`` back to the task that runs it.

A row stores the task's import path (``myapp.tasks.send_email``) or, when the task
declared one, its stable alias (``name="send-email"``). Aliases are registered
when the task object is created, i.e. when its module is imported. A worker process
may never have imported that module, so an unknown alias first triggers a one-time
import of every installed app's ``tasks`` module (as the admin autodiscovers
``admin`` modules), then is looked up again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.utils.module_loading import autodiscover_modules, import_string

from .exceptions import DispatchJobsError, TaskNotFound

if TYPE_CHECKING:
    from .compat import Task

_aliases: dict[str, str] = {}
_discovered = False


def register_alias(alias: str, module_path: str) -> None:
    existing = _aliases.get(alias)
    if existing and existing != module_path:
        raise DispatchJobsError(
            f"Task alias {alias!r} is already used by {existing!r}; it cannot also name "
            f"{module_path!r}."
        )
    _aliases[alias] = module_path


def load_task(name: str) -> Task:
    """The Task object a job row names. Raises ``TaskNotFound`` with the reason.

    A ``DispatchTask`` when it was defined for a dispatch_jobs backend; any other
    ``Task`` still runs, with the worker's defaults for the options it lacks."""
    try:
        obj = _import(name)
    except TaskNotFound:
        # Perhaps an alias whose module this process never imported: discover the
        # installed apps' tasks modules once, then look again.
        if name in _aliases or not autodiscover_tasks():
            raise
        obj = _import(name)
    if not hasattr(obj, "func") or not hasattr(obj, "module_path"):
        raise TaskNotFound(
            f"{_aliases.get(name, name)!r} is not a task (decorate the function with @task)."
        )
    return obj  # a Task: it has func and module_path


def autodiscover_tasks() -> bool:
    """Import ``<app>.tasks`` for every installed app, once per process, so the
    aliases their tasks declare are registered. True when it ran now."""
    global _discovered
    if _discovered:
        return False
    _discovered = True
    try:
        autodiscover_modules("tasks")
    except Exception as exc:
        raise TaskNotFound(f"Importing the installed apps' tasks modules failed: {exc!r}") from exc
    return True


def _import(name: str) -> Any:
    path = _aliases.get(name, name)
    try:
        return import_string(path)
    except Exception as exc:
        # Any import failure (missing module, a module that raises on import) must
        # fail the job clearly, never crash the worker.
        raise TaskNotFound(
            f"Task {name!r} cannot be imported ({type(exc).__name__}: {exc}); was it "
            "renamed or removed? Give tasks a stable name= alias to rename them safely."
        ) from exc
