"""What ``runjobs -v N`` shows, for the worker's lines and Django's ``django.tasks`` ones.

======  ==========================================================================
``-v``  lines
======  ==========================================================================
0       warnings and errors of the worker itself; nothing per job
1       the start line, one line per finished job (``joblog``), summaries
2       also each attempt's traceback, each claim batch and Django's own
        ``task_started``/``task_finished`` lines
======  ==========================================================================

When the project configures no logging (no ``LOGGING`` setting, no root handler),
runjobs owns its console: one stderr handler, one format, for both loggers, and
they stop propagating (Django's default ``console`` handler would print
``django.tasks`` lines a second time, in another format). Below ``-v 2`` that
handler drops Django's per-job records, whose failure lines repeat the job's
line with a traceback; the records are still created at ERROR, so an error
tracker hooked into logging still sees failures. When the project does configure
logging, runjobs only sets the two loggers' levels and leaves handlers and
formats to it.
"""

from __future__ import annotations

import logging

from django.conf import settings as django_settings

from ..compat import TASKS_LOGGER_NAME

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
LEVELS = {0: logging.WARNING, 1: logging.INFO, 2: logging.DEBUG}
OURS = "dispatch_jobs"
DJANGO_TASKS = TASKS_LOGGER_NAME  # "django.tasks", or the backport's on Django 5.2


# The verbosity this process was configured with (None: not configured), which
# the subprocess rung's children are configured with too.
configured: int | None = None


def configure_logging(verbosity: int) -> None:
    """Set the levels for ``verbosity``; install the console handler when the
    project has no logging of its own."""
    global configured
    configured = verbosity
    ours = logging.getLogger(OURS)
    django_tasks = logging.getLogger(DJANGO_TASKS)
    ours.setLevel(LEVELS.get(verbosity, logging.DEBUG))
    # Django's receivers log each job at INFO; below -v 2 those records are not
    # even built (and the executor skips the signals only they would hear).
    django_tasks.setLevel(logging.INFO if verbosity >= 2 else logging.WARNING)
    if verbosity >= 3:
        django_tasks.setLevel(logging.DEBUG)
    if _project_configures_logging():
        return
    handler = _console_handler(ours)
    handler.verbosity = verbosity
    for logger in (ours, django_tasks):
        if handler not in logger.handlers:
            logger.addHandler(handler)
        logger.propagate = False


class ConsoleHandler(logging.StreamHandler):
    """stderr, one format; Django's per-job records only at ``-v 2`` and up, and
    never with their traceback (the job's own line carries it at ``-v 2``)."""

    def __init__(self) -> None:
        super().__init__()  # stderr
        self.verbosity = 1
        self.setFormatter(_Formatter(FORMAT))

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name.startswith(DJANGO_TASKS) and self.verbosity < 2:
            return False
        return bool(super().filter(record))


class _Formatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        if record.name.startswith(DJANGO_TASKS) and record.exc_info:
            record = logging.makeLogRecord({**record.__dict__, "exc_info": None, "exc_text": None})
        return super().format(record)


def _console_handler(ours: logging.Logger) -> ConsoleHandler:
    """The handler installed by an earlier ``runjobs`` in this process, or a new one."""
    for handler in ours.handlers:
        if isinstance(handler, ConsoleHandler):
            return handler
    return ConsoleHandler()


def _project_configures_logging() -> bool:
    if getattr(django_settings, "LOGGING", None):
        return True
    if logging.getLogger().handlers:
        return True  # a root handler (a test runner's capture, basicConfig)
    return any(
        not isinstance(handler, ConsoleHandler)
        for name in (OURS, DJANGO_TASKS)
        for handler in logging.getLogger(name).handlers
    )
