"""OpenTelemetry spans: enqueue → execution across a real enqueue and the real
worker pipeline (``testing.run_jobs``), read from the SDK's in-memory exporter."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from opentelemetry.util._once import Once

from dispatch_jobs import store, testing, tracing
from dispatch_jobs.models import Job, JobState
from tests.jobs import tasks

pytestmark = pytest.mark.django_db

ADD = "tests.jobs.tasks.add"
EMAIL = "tests.jobs.tasks.send_email"


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    """An SDK tracer provider for this test only. The API lets a process set its
    provider once; the test restores the API's globals afterwards so the rest of
    the suite runs with tracing off, as a project without an SDK does."""
    provider = TracerProvider()
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    saved = (trace._TRACER_PROVIDER, trace._TRACER_PROVIDER_SET_ONCE)
    trace._TRACER_PROVIDER, trace._TRACER_PROVIDER_SET_ONCE = None, Once()
    trace.set_tracer_provider(provider)
    try:
        yield memory
    finally:
        trace._TRACER_PROVIDER, trace._TRACER_PROVIDER_SET_ONCE = saved
        provider.shutdown()


def named(memory: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [span for span in memory.get_finished_spans() if span.name == name]


def parent_id(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def test_execution_span_is_a_child_of_the_enqueue_span_of_the_request(exporter):
    request_tracer = trace.get_tracer("tests")
    with request_tracer.start_as_current_span("GET /checkout") as request_span:
        result = tasks.add.enqueue(2, 3)
    row = Job.objects.get(pk=result.id)
    assert set(row.trace_context) == {"traceparent"}
    assert testing.run_jobs() == 1

    (enqueue,) = named(exporter, f"enqueue {ADD}")
    (run,) = named(exporter, f"run {ADD}")
    trace_id = request_span.get_span_context().trace_id
    assert enqueue.context.trace_id == run.context.trace_id == trace_id
    assert parent_id(enqueue) == request_span.get_span_context().span_id
    assert parent_id(run) == enqueue.context.span_id
    # The stored traceparent is the enqueue span's own context.
    assert f"{enqueue.context.span_id:016x}" in row.trace_context["traceparent"]
    assert enqueue.kind == SpanKind.PRODUCER and run.kind == SpanKind.CONSUMER
    assert enqueue.attributes["messaging.destination.name"] == "default"
    assert run.attributes["messaging.message.id"] == str(row.pk)
    assert run.attributes["dispatch_jobs.task"] == ADD
    assert run.attributes["dispatch_jobs.attempt"] == 1
    assert run.status.status_code == StatusCode.UNSET


def test_enqueue_many_is_one_span_and_every_run_is_its_child(exporter):
    results = tasks.send_email.enqueue_many([((f"{i}@example.com",), {}) for i in range(3)])
    (enqueue,) = named(exporter, f"enqueue {EMAIL}")
    assert enqueue.attributes["messaging.batch.message_count"] == 3
    assert enqueue.attributes["messaging.destination.name"] == "emails"
    rows = Job.objects.filter(pk__in=[r.id for r in results])
    assert len({row.trace_context["traceparent"] for row in rows}) == 1
    assert testing.run_jobs() == 3
    runs = named(exporter, f"run {EMAIL}")
    assert len(runs) == 3
    assert {parent_id(run) for run in runs} == {enqueue.context.span_id}
    assert {run.attributes["messaging.message.id"] for run in runs} == {str(r.id) for r in results}


def test_a_failed_attempt_marks_its_span_and_the_retry_is_another_child(exporter):
    result = tasks.raise_value_error.enqueue("no stock")
    Job.objects.filter(pk=result.id).update(max_retries=1)
    testing.run_jobs()
    # The retry is scheduled after a backoff: bring it forward to run it now.
    store.run_jobs_now([int(result.id)])
    testing.run_jobs()
    assert Job.objects.get(pk=result.id).state == JobState.FAILED
    (enqueue,) = named(exporter, "enqueue tests.jobs.tasks.raise_value_error")
    runs = named(exporter, "run tests.jobs.tasks.raise_value_error")
    assert [run.attributes["dispatch_jobs.attempt"] for run in runs] == [1, 2]
    for run in runs:
        assert parent_id(run) == enqueue.context.span_id
        assert run.status.status_code == StatusCode.ERROR
        (event,) = [e for e in run.events if e.name == "exception"]
        assert event.attributes["exception.type"] == "ValueError"
        assert event.attributes["exception.message"] == "no stock"


@pytest.mark.parametrize(
    "stored",
    [
        {"traceparent": 5},
        {"traceparent": "00-not-a-trace-01"},
        ["traceparent"],
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        {"traceparent": "x" * 10_000},
    ],
)
def test_an_unreadable_stored_context_starts_a_root_span_and_the_job_runs(exporter, stored):
    job = store.enqueue_job(
        Job(name=ADD, payload={"args": [1, 1], "kwargs": {}}, trace_context=stored)
    )
    testing.run_jobs()
    assert Job.objects.get(pk=job.pk).state == JobState.COMPLETED
    (run,) = named(exporter, f"run {ADD}")
    assert run.parent is None


def test_the_store_api_writes_each_rows_own_context():
    # Two rows, two contexts: on PostgreSQL the lean INSERT sends them as a
    # varying JSON column; elsewhere the ORM's bulk insert.
    first = {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
    second = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
    jobs = store.enqueue_jobs(
        [
            Job(name=ADD, payload={"args": [1, 1], "kwargs": {}}, trace_context=first),
            Job(name=ADD, payload={"args": [2, 2], "kwargs": {}}, trace_context=second),
            Job(name=ADD, payload={"args": [3, 3], "kwargs": {}}),
        ]
    )
    stored = [Job.objects.get(pk=job.pk).trace_context for job in jobs]
    assert stored == [first, second, None]


def test_without_a_tracer_provider_nothing_is_stored_or_started():
    # opentelemetry-api is installed in the test environment, but no SDK is set.
    assert not tracing.active()
    result = tasks.add.enqueue(1, 2)
    assert Job.objects.get(pk=result.id).trace_context is None
    assert testing.run_jobs() == 1
    assert Job.objects.get(pk=result.id).state == JobState.COMPLETED


def test_without_opentelemetry_installed_both_spans_are_the_shared_no_op(monkeypatch, exporter):
    # What the module does when its import of opentelemetry failed.
    monkeypatch.setattr(tracing, "trace", None)
    monkeypatch.setattr(tracing, "propagate", None)
    assert tracing.tracer() is None
    assert tracing.enqueue_span(ADD, "default", 1) is tracing.execution_span(Job(name=ADD))
    result = tasks.add.enqueue(1, 2)
    assert Job.objects.get(pk=result.id).trace_context is None
    testing.run_jobs()
    assert exporter.get_finished_spans() == ()
