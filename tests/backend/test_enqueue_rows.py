"""Enqueue writes the row the row-by-row path wrote, one at a time or in bulk.

The backend builds rows as columns, straight from a task's resolved options
(no model instance per call). The reference here is the path it replaced: a
``Job`` built from the same options, validated by the store's ``prepare()`` and
saved by Django's ORM. Every column must match, on every database.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from dispatch_jobs import store
from dispatch_jobs.backend import DispatchBackend, _as_dispatch_task
from dispatch_jobs.compat import InvalidTask, Task, TaskResult, task_backends, task_enqueued
from dispatch_jobs.models import Job
from dispatch_jobs.results import job_to_result
from dispatch_jobs.scope import current_scope, scope
from dispatch_jobs.store import prepare
from dispatch_jobs.validation import InvalidArguments, Unschedulable, aware_run_after
from tests.backend.typed import dispatch_task
from tests.jobs import tasks
from tests.store.test_enqueue_rows import stored

pytestmark = pytest.mark.django_db

Calls = list[tuple[tuple[Any, ...], dict[str, Any]]]
GiB = 2**30
LATER = datetime(2031, 5, 1, 12, 0, tzinfo=UTC)
# Equal in Python (1 == 1.0 == True), different in JSON: none may become another.
LOOKALIKES: Calls = [((1, 1.0), {}), ((True, None), {}), (("é ✓", {"k": [1, {"n": None}]}), {})]
add = dispatch_task(tasks.add)


def _plain_task() -> Task[..., Any]:
    return Task(
        func=tasks.add.func, priority=2, backend="default", queue_name="low", run_after=None
    )


# (label, the task, the calls, the context the calls run in)
VARIANTS: list[tuple[str, Callable[[], Any], Calls, Callable[[], AbstractContextManager[Any]]]] = [
    ("defaults", lambda: add, [((i, i + 1), {}) for i in range(3)], nullcontext),
    ("keywords", lambda: add, [((1,), {"b": 2}), ((), {"a": 3, "b": 4})], nullcontext),
    ("JSON lookalikes", lambda: add, LOOKALIKES, nullcontext),
    (
        "queue and priority",
        lambda: add.using(priority=7, queue_name="high"),
        LOOKALIKES,
        nullcontext,
    ),
    ("every option", lambda: dispatch_task(tasks.sized), [((1,), {}), ((2,), {})], nullcontext),
    (
        "resource_func, per call",
        lambda: dispatch_task(tasks.import_rows),
        [((10,), {}), ((500,), {}), ((70,), {})],
        nullcontext,
    ),
    (
        "resource override",
        lambda: dispatch_task(tasks.import_rows).using(resources={"memory": "1Gi"}),
        [((10,), {}), ((5000,), {})],
        nullcontext,
    ),
    ("alias", lambda: dispatch_task(tasks.greet), [(("Ada",), {"punctuation": "?"})], nullcontext),
    ("scope option", lambda: add.using(scope=("app-9", "org-1")), [((1, 2), {})], nullcontext),
    ("scope context", lambda: add, [((1, 2), {}), ((3, 4), {})], lambda: scope("app-1", "org-2")),
    ("run_after", lambda: add.using(run_after=LATER), [((1, 2), {}), ((3, 4), {})], nullcontext),
    ("lease_ttl", lambda: add.using(lease_ttl=timedelta(seconds=17)), [((1, 2), {})], nullcontext),
    ("context", lambda: dispatch_task(tasks.attempt_number), [(("x",), {}), ((), {})], nullcontext),
    ("queued task", lambda: dispatch_task(tasks.send_email), [(("a@b.c",), {})], nullcontext),
    ("plain Django task", _plain_task, [((1, 2), {}), ((3, 4), {})], nullcontext),
]


def reference(task: Task[..., Any], args: Sequence[Any], kwargs: dict[str, Any]) -> int:
    """The row-by-row path: a ``Job`` from the task's options, ``prepare()``, the ORM."""
    definition = _as_dispatch_task(task)
    requests, limits = definition.resolve_resources(args, kwargs)
    chosen = definition.scope or current_scope()
    fields: dict[str, Any] = dict(
        name=definition.job_name,
        queue=definition.queue_name,
        payload={"args": list(args), "kwargs": dict(kwargs)},
        priority=int(definition.priority),
        max_retries=definition.max_retries,
        timeout=definition.timeout,
        lease_ttl=definition.lease_ttl,
        resources=dict(requests),
        resource_limits=dict(limits),
        resource_class=definition.resource_class,
        execution=definition.execution,
        scope_app_id=chosen.app_id,
        scope_org_id=chosen.org_id,
    )
    run_at = aware_run_after(definition)
    if run_at is not None:
        fields["run_at"] = run_at
    job = prepare(Job(**fields))
    job.save(force_insert=True)
    return job.pk


def enqueue_many(task: Task[..., Any], calls: Calls) -> list[TaskResult[..., Any]]:
    backend = task_backends[task.backend]
    assert isinstance(backend, DispatchBackend)
    return backend.enqueue_many(task, calls)


EACH_VARIANT = pytest.mark.parametrize(
    ("make", "calls", "context"),
    [variant[1:] for variant in VARIANTS],
    ids=[variant[0] for variant in VARIANTS],
)


@EACH_VARIANT
def test_one_by_one_and_bulk_store_what_the_row_by_row_path_stored(
    make: Callable[[], Task[..., Any]],
    calls: Calls,
    context: Callable[[], AbstractContextManager[Any]],
) -> None:
    same_rows_as_the_row_by_row_path(make(), calls, context)


def same_rows_as_the_row_by_row_path(
    task: Task[..., Any],
    calls: Calls,
    context: Callable[[], AbstractContextManager[Any]],
    rounds: int = 1,
) -> None:
    """Enqueue ``calls`` one by one and in bulk, ``rounds`` times each; every row
    must be what the row-by-row path wrote, payload types included."""
    with context():
        expected = [stored(reference(task, args, kwargs)) for args, kwargs in calls]
        for _ in range(rounds):
            one_by_one = [int(task.enqueue(*args, **kwargs).id) for args, kwargs in calls]
            bulk = [int(result.id) for result in enqueue_many(task, calls)]
            assert [stored(job_id) for job_id in one_by_one] == expected
            assert [stored(job_id) for job_id in bulk] == expected
    payloads = [Job.objects.get(pk=job_id).payload["args"] for job_id in bulk]
    assert [[type(v) for v in p] for p in payloads] == [[type(v) for v in a] for a, _ in calls]


@EACH_VARIANT
def test_results_are_what_reading_the_new_rows_gives(
    make: Callable[[], Task[..., Any]],
    calls: Calls,
    context: Callable[[], AbstractContextManager[Any]],
) -> None:
    task = make()
    with context():
        results = [task.enqueue(*args, **kwargs) for args, kwargs in calls]
        results += enqueue_many(task, calls)
    for result in results:
        job = store.get_job(int(result.id))
        assert fields_of(result) == fields_of(job_to_result(job, task, "default"))
        assert result.enqueued_at is not None


def fields_of(result: TaskResult[..., Any]) -> dict[str, Any]:
    return {f.name: getattr(result, f.name) for f in dataclasses.fields(result)}


@pytest.fixture
def sent() -> Iterator[list[tuple[object, TaskResult[..., Any]]]]:
    seen: list[tuple[object, TaskResult[..., Any]]] = []

    def receiver(sender: object, task_result: TaskResult[..., Any], **kwargs: Any) -> None:
        seen.append((sender, task_result))

    task_enqueued.connect(receiver)
    yield seen
    task_enqueued.disconnect(receiver)


def test_task_enqueued_is_sent_for_each_job_of_a_batch(
    sent: list[tuple[object, TaskResult[..., Any]]],
) -> None:
    results = add.enqueue_many([((i, i), {}) for i in range(4)])
    assert [(s, r) for s, r in sent] == [(DispatchBackend, r) for r in results]
    assert [r.id for r in results] == [str(j.pk) for j in Job.objects.order_by("id")]


def test_a_batch_reports_its_first_call_s_argument_error_before_a_resource_error() -> None:
    conflicting = dispatch_task(tasks.sized).using(resources={"cpu": "2"})  # over its 1 cpu limit
    with pytest.raises(InvalidArguments, match="do not match its signature"):
        conflicting.enqueue_many([((), {}), ((1,), {})])
    with pytest.raises(InvalidTask, match="requests 2000 but its limit is 1000"):
        conflicting.enqueue_many([((1,), {}), ((), {})])
    assert Job.objects.count() == 0


def test_an_unschedulable_call_in_a_batch_writes_none() -> None:
    store.register_worker(
        "w", hostname="h", pid=1, queues=["default"], concurrency=1, capacity={"memory": GiB}
    )
    rows = dispatch_task(tasks.import_rows)
    with pytest.raises(Unschedulable, match="fits no live worker"):
        rows.enqueue_many([((10,), {}), ((5000,), {})])  # 5000 MiB fits no worker
    assert Job.objects.count() == 0


def test_a_bad_call_late_in_a_batch_writes_none() -> None:
    calls: Calls = [((i, i), {}) for i in range(5)] + [((1,), {})]
    with pytest.raises(InvalidArguments, match="missing a required argument: 'b'"):
        add.enqueue_many(calls)
    assert Job.objects.count() == 0


def test_enqueue_many_of_nothing_writes_nothing() -> None:
    with CaptureQueriesContext(connection) as queries:
        assert add.enqueue_many([]) == []
    assert queries.captured_queries == []


def test_postgresql_enqueue_is_one_statement() -> None:
    """One round trip per enqueue. The test runs in a transaction, as a caller's
    enqueue often does: there the INSERT carries its own savepoint, in the same
    round trip; in autocommit it is the INSERT alone."""
    if connection.vendor != "postgresql":
        pytest.skip(f"{connection.vendor} enqueues through the ORM")
    with CaptureQueriesContext(connection) as queries:
        add.enqueue(1, 2)
        add.enqueue_many([((i, i), {}) for i in range(3)])
        add.using(priority=5, queue_name="high").enqueue(3, 4)
    sqls = [q["sql"] for q in queries.captured_queries]
    assert len(sqls) == 3
    for sql in sqls:
        # A many-row INSERT returns one row, from the INSERT wrapped in a WITH.
        assert sql.startswith(
            ("SAVEPOINT dispatch_jobs_enqueue; INSERT", "SAVEPOINT dispatch_jobs_enqueue; WITH new")
        ), sql
        assert "pg_notify" in sql and sql.endswith("RELEASE SAVEPOINT dispatch_jobs_enqueue")


def test_the_backend_takes_calls_from_an_iterator() -> None:
    backend = task_backends["default"]
    assert isinstance(backend, DispatchBackend)
    calls: Iterator[tuple[tuple[int, int], dict[str, Any]]] = (((i, i), {}) for i in range(3))
    results = backend.enqueue_many(add, calls)  # type: ignore[arg-type]
    assert [r.args for r in results] == [[0, 0], [1, 1], [2, 2]]
    assert [j.args for j in Job.objects.order_by("id")] == [[0, 0], [1, 1], [2, 2]]
