"""JSON log lines for production (the optional extra ``jsonlogs``).

A ``logging.Formatter`` to name in Django's ``LOGGING``::

    LOGGING = {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": "dispatch_jobs.jsonlog.JsonFormatter"}},
        "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "json"}},
        "root": {"handlers": ["console"], "level": "INFO"},
    }

One JSON object per line: ``time`` (ISO 8601, UTC), ``level``, ``logger``,
``message``, any ``extra={...}`` the call passed, ``exc_info`` as the formatted
traceback; and, when the line is logged while a job runs (its handler, or the
worker about it), ``job_id`` and ``task``; when an OpenTelemetry span is
recording, ``trace_id`` and ``span_id`` (hex, as trace back-ends show them), so
a log line leads to its trace.

Built on python-json-logger: a plain ``logging.Formatter``, so it formats
Django's, the worker's and every library's records as they are, with nothing
else to configure. (structlog would bring a logging pipeline of its own, which
a reusable app should not impose on a project.)
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from django.core.exceptions import ImproperlyConfigured

try:
    from pythonjsonlogger.json import JsonFormatter as _JsonFormatter
except ImportError as exc:  # named in LOGGING without the extra installed
    raise ImproperlyConfigured(
        "dispatch_jobs.jsonlog.JsonFormatter needs python-json-logger, which is not "
        "installed: pip install 'dispatch-jobs[jsonlogs]'."
    ) from exc

from . import tracing

FIELDS = ("asctime", "levelname", "name", "message")
RENAMED = {"asctime": "time", "levelname": "level", "name": "logger"}


class JsonFormatter(_JsonFormatter):
    """python-json-logger's formatter with dispatch_jobs' field names and job and
    trace context. Any keyword of python-json-logger's formatter may be given in
    ``LOGGING`` to change the fields."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if not args and "fmt" not in kwargs:
            kwargs["fmt"] = list(FIELDS)
        kwargs.setdefault("rename_fields", dict(RENAMED))
        super().__init__(*args, **kwargs)

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:  # noqa: N802
        if datefmt:
            return super().formatTime(record, datefmt)
        return datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")

    def add_fields(
        self, log_data: dict[str, Any], record: logging.LogRecord, message_dict: dict[str, Any]
    ) -> None:
        super().add_fields(log_data, record, message_dict)
        job = _current_job()
        if job is not None:
            log_data.setdefault("job_id", job.job_id)
            task = job.task_result.task
            log_data.setdefault("task", getattr(task, "job_name", None) or task.module_path)
        ids = _trace_ids()
        if ids is not None:
            log_data.setdefault("trace_id", ids[0])
            log_data.setdefault("span_id", ids[1])


def _current_job() -> Any | None:
    """The running job's context, or None (also when the worker is not loaded:
    a web process logging is no reason to import it)."""
    import sys

    context = sys.modules.get("dispatch_jobs.worker.context")
    if context is None:
        return None
    try:
        return context.current_job()
    except Exception:  # noqa: BLE001 - a log line must never fail over its context
        return None


def _trace_ids() -> tuple[str, str] | None:
    if tracing.trace is None:
        return None
    span_context = tracing.trace.get_current_span().get_span_context()
    if not span_context.is_valid:
        return None
    return f"{span_context.trace_id:032x}", f"{span_context.span_id:016x}"
