"""The engine conformance suite: each verb an engine implements (``Engine`` in
dispatch_jobs/store/engines), run once per configured database in ONE test run.

The default database always; every URL in ``DISPATCH_TEST_ENGINES`` as well
(CI runs it beside SQLite with PostgreSQL and MariaDB). The store is pointed at
each database in turn through ``DISPATCH_JOBS["DATABASE"]``, and every row is
read back from that database: a verb writing to the wrong one fails here.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from django.conf import settings
from django.db import IntegrityError, OperationalError, connections
from django.test import override_settings

from dispatch_jobs import store
from dispatch_jobs.models import Job, JobState, Usage
from dispatch_jobs.store import (
    ClaimOptions,
    Completed,
    Failed,
    ListOptions,
    Retry,
    Settled,
    Spent,
)
from dispatch_jobs.store.db import engine

ALIASES = ["default", *sorted(a for a in settings.DATABASES if a.startswith("engine_"))]

pytestmark = pytest.mark.django_db(databases="__all__")


@pytest.fixture(params=ALIASES)
def alias(request: pytest.FixtureRequest) -> Iterator[str]:
    jobs = {**getattr(settings, "DISPATCH_JOBS", {}), "DATABASE": request.param}
    with override_settings(DISPATCH_JOBS=jobs):
        assert store.db.alias() == request.param
        yield request.param


def _enqueue(alias: str, count: int = 1, **fields: object) -> list[Job]:
    fields.setdefault("name", "tests.jobs.tasks.noop")
    jobs = store.enqueue_jobs([Job(payload={"args": [i]}, **fields) for i in range(count)])
    assert all(job._state.db == alias for job in jobs)
    return jobs


def _claim(**opts: object) -> list[Job]:
    opts.setdefault("queues", ["default"])
    opts.setdefault("limit", 10)
    return store.claim_jobs(ClaimOptions(**opts))  # type: ignore[arg-type]


def test_the_engine_is_the_databases(alias: str) -> None:
    assert engine().vendor == connections[alias].vendor


def test_insert_writes_pending_rows_to_the_stores_database_only(alias: str) -> None:
    jobs = _enqueue(alias, 3, queue="q1")
    rows = Job.objects.using(alias).filter(pk__in=[j.pk for j in jobs])
    assert sorted(r.state for r in rows) == [JobState.PENDING] * 3
    others = [a for a in ALIASES if a != alias]
    for other in others:  # the ids may exist there; these rows may not
        assert not Job.objects.using(other).filter(queue="q1").exists()
    new = store.NewJobs(2, {"name": "t.rows", "queue": "q2"}, {"priority": [1, 2]})
    made = store.insert_jobs(new)
    assert [row[0] for row in made] == sorted(row[0] for row in made)
    stored = Job.objects.using(alias).filter(queue="q2").order_by("id")
    assert [j.priority for j in stored] == [1, 2]
    # Each row's id and created_at, in row order, as stored.
    assert [tuple(row) for row in made] == [(j.pk, j.created_at) for j in stored]
    many = store.insert_jobs(store.NewJobs(3, {"name": "t.rows", "queue": "q3"}, {}))
    stored = Job.objects.using(alias).filter(queue="q3").order_by("id")
    assert [tuple(row) for row in many] == [(j.pk, j.created_at) for j in stored]


def test_claim_takes_the_highest_priority_first_grants_a_lease_and_never_twice(alias: str) -> None:
    low, high = _enqueue(alias, 1, priority=1)[0], _enqueue(alias, 1, priority=9)[0]
    rest = _enqueue(alias, 3)
    ttl = timedelta(minutes=1)
    first = _claim(limit=2, worker_id="w1", lease_ttl=ttl)
    assert [j.pk for j in first] == [high.pk, low.pk]
    assert all(j.state == JobState.RUNNING and j.worker_id == "w1" for j in first)
    assert all(j.lease_epoch == 1 and j.lease_expires_at is not None for j in first)
    second = _claim(limit=10, worker_id="w2", lease_ttl=ttl)
    assert sorted(j.pk for j in second) == sorted(j.pk for j in rest)
    assert _claim(limit=10) == []
    leased = Job.objects.using(alias).get(pk=high.pk)
    now = store.db.database_now()
    assert now < leased.lease_expires_at <= now + ttl


def test_claim_keeps_to_the_budget_and_the_offered_custom_keys(alias: str) -> None:
    big = _enqueue(alias, 1, resources={"memory": 4 << 30})[0]
    gpu = _enqueue(alias, 1, resources={"gpu-a100": 1})[0]
    small = _enqueue(alias, 1, resources={"memory": 1 << 20})[0]
    fits = _claim(budget={"memory": 1 << 30})
    assert [j.pk for j in fits] == [small.pk]
    assert [j.pk for j in _claim(budget={"memory": 1 << 30}, custom_keys=["gpu-a100"])] == [gpu.pk]
    assert [j.pk for j in _claim()] == [big.pk]  # unbounded: the resource model is off


def test_read_gives_whole_rows_in_id_order_as_the_orm_reads_them(alias: str) -> None:
    jobs = _enqueue(alias, 3, resources={"memory": 1 << 20}, timeout=timedelta(seconds=9))
    wanted = [jobs[2].pk, jobs[0].pk, 10**12]  # any order; an id no row has
    read = engine().read(wanted)
    assert [j.pk for j in read] == sorted(wanted[:2])
    fields = [f.attname for f in Job._meta.concrete_fields]
    for job in read:
        orm = Job.objects.using(alias).get(pk=job.pk)
        assert [getattr(job, f) for f in fields] == [getattr(orm, f) for f in fields]
        assert job._state.db == alias and not getattr(job, "undecodable", None)
    assert engine().read([]) == []


def _settled(job: Job, transition: object, spent: Spent | None = None) -> Settled:
    return Settled(job, job.lease_epoch, transition, {"attempt": 1}, spent)  # type: ignore[arg-type]


def test_complete_writes_fenced_outcomes_with_their_usage(alias: str) -> None:
    _enqueue(alias, 4)
    done, retry, dead, stolen = _claim(worker_id="w1", lease_ttl=timedelta(minutes=1))
    Job.objects.using(alias).filter(pk=stolen.pk).update(lease_epoch=7)
    spent = Spent(timedelta(seconds=1), timedelta(milliseconds=5), "in-process")
    batch = [
        _settled(done, Completed({"n": 1}), spent),
        _settled(retry, Retry(timedelta(seconds=30), "E: again"), spent),
        _settled(dead, Failed("E: never", permanent=True)),
        _settled(stolen, Completed(), spent),
    ]
    assert store.complete_leased_jobs("w1", batch) == {stolen.pk}
    rows = {j.pk: j for j in Job.objects.using(alias).all()}
    assert (rows[done.pk].state, rows[done.pk].return_value) == (JobState.COMPLETED, {"n": 1})
    assert rows[done.pk].completed_at is not None
    assert (rows[retry.pk].state, rows[retry.pk].retry_count) == (JobState.RETRYING, 1)
    now = store.db.database_now()
    assert now < rows[retry.pk].run_at <= now + timedelta(seconds=30)
    assert (rows[dead.pk].state, rows[dead.pk].last_error) == (JobState.FAILED, "E: never")
    assert (rows[stolen.pk].state, rows[stolen.pk].lease_epoch) == (JobState.RUNNING, 7)
    usage = Usage.objects.using(alias).order_by("job_id")
    assert [(u.job_id, u.status) for u in usage] == [
        (done.pk, JobState.COMPLETED),
        (retry.pk, JobState.RETRYING),
    ]


def test_the_clock_is_the_databases_in_utc(alias: str) -> None:
    now = store.db.database_now()
    assert now.tzinfo is not None
    assert abs(now - datetime.now(UTC)) < timedelta(minutes=5)


def test_a_name_prefix_is_exact_and_case_sensitive(alias: str) -> None:
    _enqueue(alias, 1, name="Billing.charge")
    wanted = _enqueue(alias, 1, name="billing.charge")[0]
    page = store.list_jobs(ListOptions(name_prefix="billing."))
    assert [j.pk for j in page.jobs] == [wanted.pk]


def test_refusals_for_values_are_told_apart_from_other_failures(alias: str) -> None:
    assert engine().refuses_content(IntegrityError("NOT NULL constraint failed"))
    assert not engine().refuses_content(OperationalError(2006, "server has gone away"))
    with pytest.raises(Exception) as refused:
        store.insert_jobs(store.NewJobs(1, {"name": None}, {}))
    assert engine().refuses_content(refused.value)


def test_a_statement_timeout_ends_with_its_block(alias: str) -> None:
    connection = connections[alias]
    with store.db.statement_timeout(timedelta(seconds=5)):
        assert Job.objects.using(alias).count() >= 0
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SHOW statement_timeout")
            assert cursor.fetchone()[0] == "0"


def test_notify_is_silent_where_the_database_has_none(alias: str) -> None:
    store.notify_queues(["default", "default", "q1"])  # never an error
    assert engine().notifies == (connections[alias].vendor == "postgresql")


def test_a_database_without_an_engine_is_refused_by_name() -> None:
    from dispatch_jobs.exceptions import UnsupportedDatabase
    from dispatch_jobs.store.engines import _build

    with pytest.raises(UnsupportedDatabase, match="'oracle'"):
        _build("oracle")
