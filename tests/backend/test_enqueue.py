"""Enqueue: the row it writes, resolution of resources, scope, transactions, bulk."""

from __future__ import annotations

import logging
import math
import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import django
import pytest
from asgiref.sync import async_to_sync
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from dispatch_jobs import store
from dispatch_jobs.backend import DispatchBackend
from dispatch_jobs.compat import TASKS_LOGGER_NAME, InvalidTask, TaskResultStatus, task_enqueued
from dispatch_jobs.models import Job
from dispatch_jobs.scope import scope
from dispatch_jobs.validation import Unschedulable
from tests.backend.typed import dispatch_task
from tests.jobs import tasks
from tests.store.support import statements

# Typed as our DispatchTask, for what Django's Task type does not know: ``using(scope=...)``,
# ``enqueue_on_commit()``, ``enqueue_many()``. Calls that must type-check stay on ``tasks.add``.
add_task = dispatch_task(tasks.add)

GiB = 2**30
MiB = 2**20


class Abort(Exception):
    """Raised inside a test's transaction to roll it back."""


@pytest.mark.django_db
def test_enqueue_writes_one_pending_row_with_every_option():
    result = tasks.sized.using(priority=7, queue_name="high").enqueue(5)
    job = Job.objects.get()
    assert result.id == str(job.pk)
    assert result.status == TaskResultStatus.READY
    assert result.enqueued_at == job.created_at and result.enqueued_at is not None
    assert (result.args, result.kwargs, result.backend) == ([5], {}, "default")
    assert job.name == "tests.jobs.tasks.sized"
    assert (job.queue, job.priority, job.state) == ("high", 7, "pending")
    assert job.payload == {"args": [5], "kwargs": {}}
    assert job.max_retries == 5
    assert job.timeout == timedelta(seconds=30)
    assert job.lease_ttl == timedelta(seconds=20)
    assert job.resources == {"cpu": 500, "memory": 2 * GiB, "fpga": 1}
    # The declared cpu limit stays; memory's defaults to its request; custom keys none.
    assert job.resource_limits == {"cpu": 1000, "memory": 2 * GiB}
    assert (job.cpu, job.memory, job.custom_keys) == (500, 2 * GiB, ",fpga,")
    assert job.resource_class == "highmem"
    assert job.execution == "in-process"


@pytest.mark.django_db
def test_defaults_on_the_row():
    tasks.add.enqueue(1, 2)
    job = Job.objects.get()
    assert (job.max_retries, job.timeout, job.lease_ttl) == (3, timedelta(minutes=5), None)
    assert (job.resources, job.resource_limits, job.resource_class) == ({}, {}, "")
    assert (job.scope_app_id, job.scope_org_id) == ("", "")
    assert job.run_at is not None  # the database's now


@pytest.mark.django_db
def test_alias_is_stored_instead_of_the_import_path():
    tasks.greet.enqueue("Ada")
    assert Job.objects.get().name == "greet-v1"


@pytest.mark.django_db
def test_run_after_is_stored():
    when = datetime(2031, 5, 1, 12, 0, tzinfo=UTC)
    result = tasks.add.using(run_after=when).enqueue(1, 2)
    assert Job.objects.get().run_at == when
    assert result.task.run_after == when


# --- resources: floor, resource_func, per-enqueue override


@pytest.mark.django_db
def test_resource_func_raises_the_floor_key_by_key():
    tasks.import_rows.enqueue(10)  # 10 MiB < the 64 MiB floor
    tasks.import_rows.enqueue(500)  # 500 MiB raises it
    small, big = Job.objects.order_by("id")
    assert small.resources == {"memory": 64 * MiB, "cpu": 250}
    assert big.resources == {"memory": 500 * MiB, "cpu": 250}
    assert big.resource_limits == {"memory": 500 * MiB}  # cpu stays unbounded


@pytest.mark.django_db
def test_per_enqueue_override_replaces_resolved_keys():
    tasks.import_rows.using(resources={"memory": "1Gi"}).enqueue(500)
    job = Job.objects.get()
    assert job.resources == {"memory": GiB, "cpu": 250}
    assert job.memory == GiB


# --- the unschedulable rule


def _worker(worker_id: str, capacity: dict[str, int]) -> None:
    store.register_worker(
        worker_id, hostname="h", pid=1, queues=["default"], concurrency=1, capacity=capacity
    )


@pytest.mark.django_db
def test_requirement_no_live_worker_can_satisfy_is_refused():
    _worker("small", {"memory": GiB, "fpga": 1})
    _worker("medium", {"memory": 2 * GiB})
    with pytest.raises(Unschedulable) as excinfo:
        tasks.import_rows.using(resources={"memory": "4Gi"}).enqueue(1)
    message = str(excinfo.value)
    assert "tests.jobs.tasks.import_rows" in message
    assert "memory=4294967296" in message and "fits no live worker" in message
    assert Job.objects.count() == 0
    tasks.import_rows.using(resources={"memory": "2Gi"}).enqueue(1)  # fits "medium"
    assert Job.objects.count() == 1


@pytest.mark.django_db
def test_custom_key_no_worker_offers_is_refused():
    _worker("w", {"memory": 8 * GiB})
    with pytest.raises(Unschedulable, match="fpga=1"):
        tasks.sized.enqueue(1)
    assert Job.objects.count() == 0


@pytest.mark.django_db
def test_without_declared_capacity_everything_is_accepted():
    tasks.import_rows.using(resources={"memory": "1Ti"}).enqueue(1)  # no workers at all
    _worker("plain", {})
    tasks.import_rows.using(resources={"memory": "1Ti"}).enqueue(1)
    _worker("sized", {"memory": GiB})
    # "plain" declares no capacity: it is unbounded and could run it.
    tasks.import_rows.using(resources={"memory": "1Ti"}).enqueue(1)
    assert Job.objects.count() == 3


# --- scope


@pytest.mark.django_db
def test_scope_is_captured_from_the_context_at_enqueue():
    with scope(app_id="app-1", org_id="org-2"):
        tasks.add.enqueue(1, 2)
    tasks.add.enqueue(3, 4)
    inside, outside = Job.objects.order_by("id")
    assert (inside.scope_app_id, inside.scope_org_id) == ("app-1", "org-2")
    assert (outside.scope_app_id, outside.scope_org_id) == ("", "")


@pytest.mark.django_db
def test_scope_override_wins_over_the_context():
    with scope(app_id="app-1", org_id="org-2"):
        add_task.using(scope=("app-9", "")).enqueue(1, 2)
    job = Job.objects.get()
    assert (job.scope_app_id, job.scope_org_id) == ("app-9", "")


# --- the task_enqueued signal


@pytest.mark.django_db
def test_task_enqueued_is_sent_with_the_backend_class():
    seen = []

    def receiver(sender, task_result, **kwargs):
        seen.append((sender, task_result.id, task_result.status))

    task_enqueued.connect(receiver)
    try:
        result = tasks.add.enqueue(1, 2)
    finally:
        task_enqueued.disconnect(receiver)
    assert seen == [(DispatchBackend, result.id, TaskResultStatus.READY)]


@pytest.mark.django_db
def test_django_logs_each_enqueue_when_its_logger_takes_debug_records(caplog):
    """The send is skipped only while Django's own receiver would drop it: with
    the tasks logger at DEBUG, each enqueued job is logged, one by one and in a
    batch."""
    with caplog.at_level(logging.DEBUG, logger=TASKS_LOGGER_NAME):
        one = tasks.add.enqueue(1, 2)
        many = add_task.enqueue_many([((1, 2), {}), ((3, 4), {})])
    logged = [r.getMessage() for r in caplog.records if "enqueued" in r.getMessage()]
    assert len(logged) == 3
    for result, line in zip([one, *many], logged, strict=True):
        assert f"id={result.id} " in line
    caplog.clear()
    with caplog.at_level(logging.INFO, logger=TASKS_LOGGER_NAME):
        tasks.add.enqueue(1, 2)
    assert not [r for r in caplog.records if "enqueued" in r.getMessage()]


# --- transactions


def _count_from_another_connection() -> int:
    """Count jobs on a fresh connection (a new thread has its own)."""
    counts: list[int] = []

    def read() -> None:
        try:
            counts.append(Job.objects.count())
        finally:
            from django.db import connections

            connections.close_all()

    thread = threading.Thread(target=read)
    thread.start()
    thread.join(30)
    return counts[0]


@pytest.mark.django_db(transaction=True)
def test_enqueue_commits_with_the_callers_transaction():
    with transaction.atomic():
        tasks.add.enqueue(1, 2)
        assert Job.objects.count() == 1  # visible inside
        assert _count_from_another_connection() == 0  # not to a worker yet
    assert _count_from_another_connection() == 1


@pytest.mark.django_db(transaction=True)
def test_enqueue_rolls_back_with_the_callers_transaction():
    with pytest.raises(Abort), transaction.atomic():
        tasks.add.enqueue(1, 2)
        raise Abort
    assert Job.objects.count() == 0


@pytest.mark.django_db
def test_enqueue_on_commit_writes_only_when_the_transaction_commits(
    django_capture_on_commit_callbacks,
):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        add_task.enqueue_on_commit(1, 2)
    assert Job.objects.count() == 0
    assert len(callbacks) == 1
    callbacks[0]()
    assert Job.objects.get().payload == {"args": [1, 2], "kwargs": {}}


@pytest.mark.django_db
def test_enqueue_on_commit_validates_at_the_call(django_capture_on_commit_callbacks):
    with (
        django_capture_on_commit_callbacks(execute=True) as callbacks,
        pytest.raises(InvalidTask, match="missing a required argument: 'b'"),
    ):
        add_task.enqueue_on_commit(1)
    assert callbacks == [] and Job.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_enqueue_on_commit_is_dropped_on_rollback():
    with pytest.raises(Abort), transaction.atomic():
        add_task.enqueue_on_commit(1, 2)
        raise Abort
    assert Job.objects.count() == 0
    with transaction.atomic():
        add_task.enqueue_on_commit(3, 4)
        assert Job.objects.count() == 0
    assert Job.objects.get().args == [3, 4]


# --- bulk enqueue


@pytest.mark.django_db
def test_enqueue_many_is_one_insert():
    calls: list[tuple[tuple[int, int], dict[str, Any]]] = [((i, i + 1), {}) for i in range(50)]
    with CaptureQueriesContext(connection) as queries:
        results = add_task.using(priority=3).enqueue_many(calls)
    inserts = statements(queries, "INSERT")
    if connection.vendor == "sqlite" and django.VERSION < (6, 0):
        # Django 5.2 caps a SQLite statement at 999 parameters (6.0 reads SQLite's own
        # limit), so its bulk_create splits 50 rows into a few INSERTs, each as full as
        # the cap allows, all inside one transaction.
        most = math.ceil(50 * len(Job._meta.concrete_fields) / 999)
        assert 1 < len(inserts) <= most
    else:
        assert len(inserts) == 1
    assert len(results) == 50 and len({r.id for r in results}) == 50
    jobs = list(Job.objects.order_by("id"))
    assert [j.args for j in jobs] == [[i, i + 1] for i in range(50)]
    assert {j.priority for j in jobs} == {3}
    assert [r.id for r in results] == [str(j.pk) for j in jobs]
    assert all(r.enqueued_at is not None for r in results)


@pytest.mark.django_db
def test_enqueue_many_validates_every_call_before_writing():
    with pytest.raises(InvalidTask, match=r"tests\.jobs\.tasks\.add: argument args\[0\] is set"):
        add_task.enqueue_many([((1, 2), {}), (({3},), {"b": 1})])
    assert Job.objects.count() == 0


@pytest.mark.django_db
def test_enqueue_many_takes_any_sequence_and_mapping_and_keeps_nothing_of_the_callers():
    """Arguments as a list, a tuple, a generator, keywords as a dict or another
    mapping: each stored and returned as JSON, and what the caller changes in its
    own objects afterwards changes neither the row nor the result."""
    from collections import OrderedDict

    args: list[Any] = [1, [2]]
    kwargs: dict[str, Any] = {"b": [3]}
    results = add_task.enqueue_many(
        [
            (args, {}),
            ((4,), kwargs),
            ((n for n in (5, 6)), {}),
            ((7,), OrderedDict(b=8)),
        ]
    )
    args[1].append("later")
    args.append("later")
    kwargs["b"].append("later")
    kwargs["c"] = "later"
    expected = [([1, [2]], {}), ([4], {"b": [3]}), ([5, 6], {}), ([7], {"b": 8})]
    assert [(r.args, r.kwargs) for r in results] == expected
    rows = Job.objects.filter(pk__in=[int(r.id) for r in results]).order_by("pk")
    assert [(j.args, j.kwargs) for j in rows] == expected


@pytest.mark.django_db
def test_enqueue_many_reads_workers_once():
    _worker("w", {"memory": 4 * GiB})
    with CaptureQueriesContext(connection) as queries:
        tasks.import_rows.enqueue_many([((i,), {}) for i in range(10)])
    worker_reads = [q for q in queries.captured_queries if "dispatch_jobs_worker" in q["sql"]]
    assert len(worker_reads) == 1
    assert Job.objects.count() == 10


@pytest.mark.django_db
def test_aenqueue_many():
    results = async_to_sync(add_task.aenqueue_many)([((1, 2), {}), ((3, 4), {})])
    assert [r.args for r in results] == [[1, 2], [3, 4]]
    assert Job.objects.count() == 2


@pytest.mark.django_db
def test_a_plain_django_task_runs_with_the_default_options():
    from dispatch_jobs.compat import Task

    plain: Task[[int, int], int] = Task(
        func=tasks.add.func, priority=2, backend="default", queue_name="low", run_after=None
    )
    result = plain.enqueue(1, 2)
    job = Job.objects.get()
    assert (job.name, job.queue, job.priority, job.max_retries) == (
        "tests.jobs.tasks.add",
        "low",
        2,
        3,
    )
    assert result.task is plain
