"""The enqueue and claim hot paths store exactly what the ORM would have.

On PostgreSQL enqueue writes with its own INSERT (constant columns as one
parameter, varying ones as a JSON document of rows) and the claim is one
``UPDATE ... RETURNING``; these tests pin the values and the order that must
survive those shortcuts, on every database.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db import DatabaseError, connection, transaction

from dispatch_jobs import store
from dispatch_jobs.models import Job, JobState
from tests.factories import JobFactory
from tests.store.support import capture, claim, db_now, unwrapped

pytestmark = pytest.mark.django_db

NAME = "tests.jobs.tasks.add"
# Equal in Python (1 == 1.0 == True), different in JSON: none may become another.
LOOKALIKES: list[list[Any]] = [[1], [1.0], [True], [None], ["é ✓"], [{"k": [1, {"n": None}]}]]


def columns(job_id: int) -> dict[str, Any]:
    row = Job.objects.get(pk=job_id)
    return {f.attname: getattr(row, f.attname) for f in Job._meta.concrete_fields}


def test_bulk_rows_keep_their_own_values_and_input_order() -> None:
    later = db_now(timedelta(hours=1))
    jobs = []
    for i, args in enumerate(LOOKALIKES):
        # run_at left out for even rows: the column's database default applies.
        deferred = {"run_at": later} if i % 2 else {}
        jobs.append(
            Job(
                name=NAME,
                payload={"args": args, "kwargs": {}},
                priority=i % 3,
                timeout=timedelta(seconds=i, microseconds=7) if i % 2 else None,
                lease_ttl=timedelta(days=1, microseconds=1) if i == 2 else None,
                resources={"memory": 10 * i} if i else {},
                scope_org_id=f"org-{i}",
                return_value={"x": i} if i == 3 else None,
                **deferred,
            )
        )
    created = store.enqueue_jobs(jobs)
    assert [j.pk for j in created] == sorted(j.pk for j in created)
    now = db_now()
    for i, job in enumerate(created):
        row = columns(job.pk)
        assert row["payload"] == {"args": LOOKALIKES[i], "kwargs": {}}
        assert type(row["payload"]["args"][0]) is type(LOOKALIKES[i][0])
        assert row["priority"] == i % 3
        assert row["timeout"] == (timedelta(seconds=i, microseconds=7) if i % 2 else None)
        assert row["lease_ttl"] == (timedelta(days=1, microseconds=1) if i == 2 else None)
        assert row["memory"] == 10 * i and row["scope_org_id"] == f"org-{i}"
        assert row["return_value"] == ({"x": i} if i == 3 else None)
        assert row["state"] == JobState.PENDING and row["attempts"] == []
        if i % 2:
            assert row["run_at"] == later
        else:
            assert row["run_at"] <= now
        # The returned objects carry what the database assigned.
        assert (job.run_at, job.created_at) == (row["run_at"], row["created_at"])


def test_python_equal_payloads_keep_their_json_types() -> None:
    """1 == 1.0 == True: a batch of them is not "one value for every row"."""
    values = [1, 1.0, True]
    created = store.enqueue_jobs([Job(name=NAME, payload={"args": [v]}) for v in values])
    stored = [Job.objects.get(pk=j.pk).payload["args"][0] for j in created]
    assert [type(v) for v in stored] == [int, float, bool]


def test_bulk_of_identical_rows_stores_each_one() -> None:
    created = store.enqueue_jobs([Job(name=NAME) for _ in range(7)])
    assert len({j.pk for j in created}) == 7
    assert Job.objects.filter(pk__in=[j.pk for j in created]).count() == 7
    assert all(j.created_at is not None and not j._state.adding for j in created)


def test_single_row_keeps_its_values() -> None:
    later = db_now(timedelta(minutes=5))
    job = store.enqueue_job(
        Job(name=NAME, payload={"args": [1.0]}, run_at=later, timeout=timedelta(seconds=90))
    )
    row = columns(job.pk)
    assert row["payload"] == {"args": [1.0]} and type(row["payload"]["args"][0]) is float
    assert (row["run_at"], row["timeout"]) == (later, timedelta(seconds=90))
    assert job.created_at == row["created_at"]


@pytest.mark.parametrize("many", [False, True])
def test_an_overlong_value_is_refused_not_truncated(many: bool) -> None:
    if connection.vendor == "sqlite":
        pytest.skip("SQLite does not enforce a VARCHAR's length: nothing to refuse")
    job = Job(name=NAME, resource_class="r" * 101)
    with pytest.raises(DatabaseError), transaction.atomic():
        if many:
            store.enqueue_jobs([job, Job(name=NAME)])
        else:
            store.enqueue_job(job)
    assert not Job.objects.filter(name=NAME).exists()


def test_postgresql_enqueue_and_claim_are_one_statement_each() -> None:
    if connection.vendor != "postgresql":
        pytest.skip(f"{connection.vendor} keeps the ORM's statements (no UPDATE ... RETURNING)")
    with capture() as ctx:
        store.enqueue_jobs([Job(name=NAME, payload={"args": [i]}) for i in range(5)])
        store.enqueue_job(Job(name=NAME))
        claimed = claim(limit=10, worker_id="w", lease_ttl=timedelta(seconds=30))
    sqls = [unwrapped(q["sql"]) for q in ctx.captured_queries]
    # Aside: the claim's list of queues with limits, read at most once a second
    # per process (store.limited_queues), a look at the small control table.
    limited = [sql for sql in sqls if sql.startswith('SELECT "dispatch_jobs_queuecontrol"')]
    assert len(limited) <= 1, limited
    sqls = [sql for sql in sqls if sql not in limited]
    assert len(sqls) == 3, sqls
    assert sqls[0].startswith("INSERT") and sqls[1].startswith("INSERT")
    assert "pg_notify" in sqls[0] and "pg_notify" in sqls[1]
    assert sqls[2].startswith("UPDATE") and "FOR UPDATE SKIP LOCKED" in sqls[2]
    assert len(claimed) == 6


def test_repeated_claims_use_each_call_s_own_options() -> None:
    """Compiled claims are reused: a different budget or worker must not be."""
    big = JobFactory.create(resources={"memory": 100})
    small = JobFactory.create(resources={"memory": 10})
    assert [j.pk for j in claim(budget={"memory": 50}, worker_id="a", lease_ttl=timedelta(1))] == [
        small.pk
    ]
    assert claim(budget={"memory": 50}, worker_id="a", lease_ttl=timedelta(1)) == []
    (taken,) = claim(budget={"memory": 500}, worker_id="b", lease_ttl=timedelta(1))
    assert taken.pk == big.pk and taken.worker_id == "b" and taken.lease_epoch == 1
    assert Job.objects.get(pk=small.pk).worker_id == "a"


def test_claim_returns_the_contract_order_with_full_rows() -> None:
    low = JobFactory.create(priority=0)
    high = JobFactory.create(priority=5, payload={"args": [2]})
    preferred = JobFactory.create(priority=5, primary_input_hash="h1")
    jobs = claim(limit=10, prefer_hashes=["h1"], worker_id="w", lease_ttl=timedelta(30))
    assert [j.pk for j in jobs] == [preferred.pk, high.pk, low.pk]
    got = jobs[1]
    assert got.payload == {"args": [2]} and got.state == JobState.RUNNING
    assert got.lease_expires_at is not None and not got._state.adding
    assert got._state.db == "default"
