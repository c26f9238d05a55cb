"""OpenTelemetry spans for enqueue and execution (the optional extra ``tracing``).

Two spans per job, and the W3C trace context between them:

- ``enqueue_span`` wraps the tasks backend's INSERT (one span per ``enqueue`` or
  ``enqueue_many`` call, a PRODUCER span, a child of whatever is current: the
  request's span under Django instrumentation). It yields the propagation
  carrier (``{"traceparent": ..., "tracestate": ...}``), which the backend stores
  in the job row's ``trace_context`` column.
- ``execution_span`` wraps the handler call on the worker (a CONSUMER span named
  ``run <task>``), started as a child of the stored context, so one trace runs
  from the request that enqueued the job to every attempt that ran it.

Tracing is active only when ``opentelemetry-api`` is importable AND a real
tracer provider is installed (an SDK, configured by the project or by
``opentelemetry-instrument``). Otherwise both functions return one shared
``nullcontext`` and no span, carrier or column is made: the API alone would only
produce no-op spans, and the job row would carry nothing useful.

Only dispatch_jobs' own code calls these; the worker never lets a malformed
stored context (a row written by hand, say) fail a job: it is ignored.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import TYPE_CHECKING, Any

from .attempts import attempt_list

try:
    # (a namespace package: some mypy set-ups do not see its submodules)
    from opentelemetry import propagate, trace  # type: ignore[attr-defined,unused-ignore]
except ImportError:  # the extra is not installed: everything here is a no-op
    propagate = None  # type: ignore[assignment,unused-ignore]
    trace = None  # type: ignore[assignment,unused-ignore]

if TYPE_CHECKING:
    from .models import Job

logger = logging.getLogger("dispatch_jobs.tracing")

TRACER_NAME = "dispatch_jobs"
# Spans' messaging.system: OpenTelemetry's messaging conventions describe a job
# queue as well as a broker (destination = queue, message id = job id).
SYSTEM = "dispatch_jobs"
# The largest carrier kept from a stored row: traceparent is 55 characters and
# tracestate at most 512 by the W3C spec; anything much bigger was not written by us.
MAX_CARRIER_CHARS = 4096

_NO_SPAN: AbstractContextManager[Any] = nullcontext(None)
_UNKNOWN = object()
_PROVIDER_FROM_ENV = "OTEL_PYTHON_TRACER_PROVIDER" in os.environ
_NO_OP_PROVIDERS: tuple[type, ...] = (
    (trace.ProxyTracerProvider, trace.NoOpTracerProvider) if trace is not None else ()
)
_cache: tuple[object, Any] = (None, None)


def tracer() -> Any | None:
    """Our tracer when a real tracer provider is installed, else None.

    The global provider is looked up on each call (a dictionary read), so a
    provider installed after start-up is picked up; the tracer is cached per
    provider because an SDK builds a new one on every ``get_tracer``.
    """
    global _cache
    if trace is None:
        return None
    # Read the API's global directly while no provider is set: get_tracer_provider()
    # then looks the environment up on every call, which is most of what tracing
    # "off" would cost per job. Any other case goes through the public call.
    provider = getattr(trace, "_TRACER_PROVIDER", _UNKNOWN)
    if provider is None and not _PROVIDER_FROM_ENV:
        return None
    provider = trace.get_tracer_provider()
    if isinstance(provider, _NO_OP_PROVIDERS):
        return None
    cached_provider, cached_tracer = _cache
    if cached_provider is provider:
        return cached_tracer
    made = provider.get_tracer(TRACER_NAME)
    _cache = (provider, made)
    return made


def active() -> bool:
    """True when spans are recorded (see the module docstring)."""
    return tracer() is not None


def enqueue_span(
    task_name: str, queue: str, count: int
) -> AbstractContextManager[dict[str, str] | None]:
    """A span around writing ``count`` jobs of one task; yields the carrier to
    store in each row (None when tracing is off)."""
    current = tracer()
    if current is None:
        return _NO_SPAN
    return _enqueue(current, task_name, queue, count)


@contextmanager
def _enqueue(
    current: Any, task_name: str, queue: str, count: int
) -> Iterator[dict[str, str] | None]:
    attributes: dict[str, Any] = {
        "messaging.system": SYSTEM,
        "messaging.operation.type": "send",
        "messaging.destination.name": queue,
        "dispatch_jobs.task": task_name,
    }
    if count != 1:
        attributes["messaging.batch.message_count"] = count
    with current.start_as_current_span(
        f"enqueue {task_name}", kind=trace.SpanKind.PRODUCER, attributes=attributes
    ):
        carrier: dict[str, str] = {}
        # Injected inside the span: the job's parent is this enqueue span.
        propagate.inject(carrier)
        yield carrier or None


def execution_span(job: Job) -> AbstractContextManager[Any]:
    """A span around one attempt's handler call, a child of the context stored
    at enqueue (a root span when the row has none). An exception leaving the
    block is recorded on the span and marks it as an error, then re-raised."""
    current = tracer()
    if current is None:
        return _NO_SPAN
    attributes: dict[str, Any] = {
        "messaging.system": SYSTEM,
        "messaging.operation.type": "process",
        "messaging.destination.name": job.queue,
        "messaging.message.id": str(job.pk),
        "dispatch_jobs.task": job.name,
        "dispatch_jobs.attempt": len(attempt_list(job.attempts)) + 1,
    }
    return current.start_as_current_span(
        f"run {job.name}",
        context=parent_context(job.trace_context),
        kind=trace.SpanKind.CONSUMER,
        attributes=attributes,
    )


def parent_context(stored: object) -> Any | None:
    """The context extracted from a row's ``trace_context``; None (the current
    context) when the value is missing or not a carrier we could have written."""
    if not isinstance(stored, Mapping) or not stored or propagate is None:
        return None
    carrier = {k: v for k, v in stored.items() if isinstance(k, str) and isinstance(v, str)}
    if sum(len(k) + len(v) for k, v in carrier.items()) > MAX_CARRIER_CHARS:
        return None
    try:
        return propagate.extract(carrier)
    except Exception:  # noqa: BLE001 - a bad stored value must never fail the job
        logger.debug("Ignoring an unreadable trace context: %r", stored, exc_info=True)
        return None
