"""The JSON log formatter, configured through LOGGING as docs/observability.md says."""

from __future__ import annotations

import importlib
import io
import json
import logging
import logging.config
import sys
from collections.abc import Iterator

import pytest
from django.core.exceptions import ImproperlyConfigured

from dispatch_jobs import testing
from dispatch_jobs.compat import task

STREAM = io.StringIO()
LOGGER = "tests.jsonlog"


@task
def log_inside_a_job(word: str) -> None:
    logging.getLogger(LOGGER).warning("working on %s", word, extra={"step": 2})


@pytest.fixture
def lines() -> Iterator[None]:
    """The docs' LOGGING, pointed at a string stream; parsed lines out."""
    logging.config.dictConfig(
        {
            "version": 1,
            "disable_existing_loggers": False,
            "formatters": {"json": {"()": "dispatch_jobs.jsonlog.JsonFormatter"}},
            "handlers": {
                "memory": {
                    "class": "logging.StreamHandler",
                    "formatter": "json",
                    "stream": "ext://tests.test_jsonlog.STREAM",
                }
            },
            "loggers": {LOGGER: {"handlers": ["memory"], "level": "INFO", "propagate": False}},
        }
    )
    STREAM.seek(0)
    STREAM.truncate()
    yield
    logging.getLogger(LOGGER).handlers.clear()


def read() -> list[dict]:
    return [json.loads(line) for line in STREAM.getvalue().splitlines()]


def test_one_json_object_per_line_with_the_standard_fields(lines):
    logging.getLogger(LOGGER).info("hello %s", "world", extra={"order_id": 7})
    (line,) = read()
    assert line["message"] == "hello world"
    assert line["level"] == "INFO"
    assert line["logger"] == LOGGER
    assert line["order_id"] == 7
    assert line["time"].endswith("+00:00") and "T" in line["time"]
    assert "job_id" not in line and "trace_id" not in line


def test_a_traceback_is_one_field(lines):
    try:
        raise ValueError("bad input\nsecond line")
    except ValueError:
        logging.getLogger(LOGGER).exception("it failed")
    (line,) = read()
    assert line["message"] == "it failed"
    assert "ValueError: bad input" in line["exc_info"]


@pytest.mark.django_db
def test_lines_logged_inside_a_job_carry_its_id_and_task(lines):
    result = log_inside_a_job.enqueue("invoices")
    assert testing.run_jobs() == 1
    (line,) = [entry for entry in read() if entry["logger"] == LOGGER]
    assert line["message"] == "working on invoices"
    assert line["job_id"] == int(result.id)
    assert line["task"] == "tests.test_jsonlog.log_inside_a_job"
    assert line["step"] == 2


def test_lines_inside_a_recording_span_carry_the_trace_ids(lines):
    from opentelemetry.sdk.trace import TracerProvider

    tracer = TracerProvider().get_tracer("tests")
    with tracer.start_as_current_span("request") as span:
        logging.getLogger(LOGGER).info("in a span")
    (line,) = read()
    context = span.get_span_context()
    assert line["trace_id"] == f"{context.trace_id:032x}"
    assert line["span_id"] == f"{context.span_id:016x}"


def test_without_python_json_logger_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "pythonjsonlogger.json", None)  # as if not installed
    monkeypatch.delitem(sys.modules, "dispatch_jobs.jsonlog", raising=False)
    with pytest.raises(ImproperlyConfigured, match=r"pip install 'dispatch-jobs\[jsonlogs\]'"):
        importlib.import_module("dispatch_jobs.jsonlog")
