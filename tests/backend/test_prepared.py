"""PostgreSQL: the enqueue INSERT as a prepared statement, where the alias allows it.

Django prepares nothing by default (``prepare_threshold`` is ``None``: PgBouncer
before 1.21 in transaction mode cannot carry a prepared statement across server
connections). An alias whose OPTIONS set ``prepare_threshold`` says its connection
can hold them; there the store binds its INSERT server-side, psycopg prepares it,
and an enqueue in autocommit skips the planning (on a one-row INSERT of this wide
table the plan costs more than the write). The rows written must not change.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection, transaction

from dispatch_jobs.compat import Task
from dispatch_jobs.models import Job
from tests.backend.test_enqueue_rows import EACH_VARIANT, Calls, same_rows_as_the_row_by_row_path
from tests.jobs import tasks

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="prepared statements: PostgreSQL's engine"
    ),
]


def _reconnect_with(threshold: int | None) -> None:
    options = connection.settings_dict.setdefault("OPTIONS", {})
    if threshold is None:
        options.pop("prepare_threshold", None)
    else:
        options["prepare_threshold"] = threshold
    connection.close()


@pytest.fixture
def preparing() -> Iterator[None]:
    """The test database's alias with ``prepare_threshold = 0``: psycopg prepares a
    statement the first time it runs it."""
    threshold = connection.settings_dict.get("OPTIONS", {}).get("prepare_threshold")
    _reconnect_with(0)
    yield
    _reconnect_with(threshold)


def _prepared_inserts() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return [row[0] for row in cursor.fetchall() if "INSERT" in row[0]]


@pytest.fixture
def not_preparing() -> Iterator[None]:
    """The alias as Django configures it: no ``prepare_threshold`` (whatever
    DISPATCH_TEST_PREPARE set for the run)."""
    threshold = connection.settings_dict.get("OPTIONS", {}).get("prepare_threshold")
    _reconnect_with(None)
    yield
    _reconnect_with(threshold)


@pytest.mark.usefixtures("not_preparing")
def test_by_default_nothing_is_prepared() -> None:
    tasks.add.enqueue(1, 2)
    tasks.add.enqueue(3, 4)
    tasks.add.enqueue_many([((i, i), {}) for i in range(3)])
    assert _prepared_inserts() == []


@pytest.mark.usefixtures("preparing")
def test_an_alias_that_prepares_runs_the_insert_prepared() -> None:
    first = tasks.add.enqueue(1, 2)
    second = tasks.add.enqueue(3, 4)
    bulk = tasks.add.enqueue_many([((i, i), {}) for i in range(3)])
    prepared = _prepared_inserts()
    # One statement per shape: the one-row INSERT, prepared once, served twice,
    # and the many-row one.
    assert len(prepared) == 2, prepared
    assert all('INSERT INTO "dispatch_jobs_job"' in sql for sql in prepared)
    ids = [int(first.id), int(second.id), *(int(r.id) for r in bulk)]
    assert [job.args for job in Job.objects.filter(pk__in=ids).order_by("pk")] == [
        [1, 2],
        [3, 4],
        [0, 0],
        [1, 1],
        [2, 2],
    ]


@pytest.mark.usefixtures("preparing")
def test_one_job_enqueues_run_on_a_cursor_kept_on_the_connection() -> None:
    """In autocommit the one-row INSERT reuses one cursor per connection (opening
    one per enqueue cost a tenth of its time); a new connection gets a new one,
    and the project's ``execute_wrapper()`` still sees every INSERT."""
    seen: list[str] = []

    def wrapper(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if sql.startswith("INSERT"):
            seen.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        first = tasks.add.enqueue(1, 2)
        kept = connection._dispatch_jobs_cursor  # type: ignore[attr-defined]
        second = tasks.add.enqueue(3, 4)
        assert connection._dispatch_jobs_cursor is kept  # type: ignore[attr-defined]
        connection.close()
        third = tasks.add.enqueue(5, 6)
        assert connection._dispatch_jobs_cursor is not kept  # type: ignore[attr-defined]
    assert len(seen) == 3
    ids = [int(first.id), int(second.id), int(third.id)]
    assert [job.args for job in Job.objects.filter(pk__in=ids).order_by("pk")] == [
        [1, 2],
        [3, 4],
        [5, 6],
    ]


@pytest.mark.usefixtures("preparing")
def test_a_connection_shared_between_threads_keeps_no_cursor() -> None:
    """Threads on one connection (as Django's live server shares one) would read
    each other's result from one cursor: each enqueue there opens its own."""
    import threading

    from django.db import connections

    shared = connections[connection.alias]  # the wrapper itself, not the proxy
    shared.ensure_connection()
    shared._dispatch_jobs_cursor = None  # type: ignore[attr-defined]
    shared.inc_thread_sharing()
    results: list[Any] = []
    errors: list[BaseException] = []

    def enqueue(n: int) -> None:
        connections[shared.alias] = shared  # this thread uses the shared one
        try:
            results.append(tasks.add.enqueue(n, n))
        except BaseException as exc:  # reported below, in the test's thread
            errors.append(exc)

    try:
        threads = [threading.Thread(target=enqueue, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        shared.dec_thread_sharing()
    assert errors == []
    assert shared._dispatch_jobs_cursor is None  # type: ignore[attr-defined]
    assert sorted(r.args for r in results) == [[n, n] for n in range(4)]
    rows = Job.objects.filter(pk__in=[int(r.id) for r in results])
    assert sorted(j.args for j in rows) == [[n, n] for n in range(4)]
    tasks.add.enqueue(9, 9)  # no longer shared: the cursor is kept again
    assert shared._dispatch_jobs_cursor is not None  # type: ignore[attr-defined]


@pytest.mark.usefixtures("preparing")
def test_a_refusal_on_the_kept_cursor_is_djangos_error_and_the_next_enqueue_goes_on() -> None:
    """The database's refusal reaches the caller as Django's error class, and the
    kept cursor serves the next enqueue."""
    from django.db import IntegrityError

    from dispatch_jobs.store import NewJobs, insert_jobs

    tasks.add.enqueue(1, 2)
    row = NewJobs(1, {"name": "tests.jobs.tasks.add", "queue": "default", "replay_of_id": 0}, {})
    with pytest.raises(IntegrityError):
        insert_jobs(row)  # no job 0 to be a replay of
    tasks.add.enqueue(3, 4)
    assert [job.args for job in Job.objects.order_by("pk")] == [[1, 2], [3, 4]]


@pytest.mark.usefixtures("preparing")
def test_in_the_callers_transaction_the_insert_keeps_its_savepoint() -> None:
    """Inside ``atomic()`` the INSERT binds client-side and runs in its savepoint as
    always, so a refusal leaves the caller's transaction usable; nothing prepared."""
    with transaction.atomic():
        tasks.add.enqueue(1, 2)
        assert Job.objects.count() == 1
    assert _prepared_inserts() == []


@EACH_VARIANT
@pytest.mark.usefixtures("preparing")
def test_prepared_inserts_store_what_the_row_by_row_path_stored(
    make: Callable[[], Task[..., Any]],
    calls: Calls,
    context: Callable[[], AbstractContextManager[Any]],
) -> None:
    # Twice each: the first run prepares, the second executes the prepared plan.
    same_rows_as_the_row_by_row_path(make(), calls, context, rounds=2)
    assert _prepared_inserts()


@pytest.mark.usefixtures("preparing")
def test_a_row_refused_on_the_prepared_path_fails_alone() -> None:
    """One job's value the database refuses (a priority over 64 bits, which the
    backend's checks would stop; ``insert_jobs`` skips them) fails that enqueue
    alone: nothing of it is written, and the next enqueues on the same connection,
    prepared, go on."""
    from django.db import DatabaseError

    from dispatch_jobs.store import NewJobs, insert_jobs

    before = tasks.add.enqueue(1, 2)
    row = NewJobs(1, {"name": "tests.jobs.tasks.add", "queue": "default", "priority": 2**70}, {})
    with pytest.raises((DatabaseError, OverflowError)):
        insert_jobs(row)
    after = tasks.add.enqueue(3, 4)
    assert [job.args for job in Job.objects.order_by("pk")] == [[1, 2], [3, 4]]
    assert int(after.id) > int(before.id)
    assert _prepared_inserts()


@pytest.mark.parametrize("fixture", ["preparing", "not_preparing"])
def test_a_many_row_insert_the_database_refuses_writes_none_and_the_next_goes_on(
    fixture: str, request: pytest.FixtureRequest
) -> None:
    """The many-row INSERT (one statement, one row back) with one value the
    database refuses: no row of it is written, in autocommit or in the caller's
    transaction (which stays usable), and the next bulk enqueue goes on."""
    from django.db import DatabaseError

    from dispatch_jobs.store import NewJobs, insert_jobs

    request.getfixturevalue(fixture)
    before = tasks.add.enqueue_many([((1, 1), {}), ((2, 2), {})])
    bad = NewJobs(
        3, {"name": "tests.jobs.tasks.add", "queue": "default"}, {"priority": [1, 2**70, 3]}
    )
    with pytest.raises((DatabaseError, OverflowError)):
        insert_jobs(bad)
    with transaction.atomic():
        with pytest.raises((DatabaseError, OverflowError)):
            insert_jobs(bad)
        inside = tasks.add.enqueue_many([((3, 3), {}), ((4, 4), {})])
    after = tasks.add.enqueue_many([((5, 5), {}), ((6, 6), {})])
    assert [job.args for job in Job.objects.order_by("pk")] == [[n, n] for n in range(1, 7)]
    ids = [int(r.id) for r in (*before, *inside, *after)]
    assert ids == sorted(ids) and len(set(ids)) == 6


def _prepared(prefix: str) -> list[tuple[str, str, int, int]]:
    """This connection's prepared statements that start with ``prefix``: name,
    text, and how many generic and custom plans PostgreSQL made for them."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT name, statement, generic_plans, custom_plans FROM pg_prepared_statements "
            "WHERE statement LIKE %s",
            [prefix + "%"],
        )
        return list(cursor.fetchall())


def _claim(limit: int) -> list[Job]:
    from dispatch_jobs import store

    return store.claim_jobs(
        store.ClaimOptions(
            queues=["default"], limit=limit, worker_id="w1", lease_ttl=timedelta(seconds=30)
        )
    )


def _complete(jobs: list[Job]) -> set[int]:
    from dispatch_jobs import store

    settled = [
        store.Settled(job, job.lease_epoch, store.Completed({"n": job.pk}), {"attempt": 1})
        for job in jobs
    ]
    return store.complete_leased_jobs("w1", settled)


def test_by_default_the_claim_and_the_completion_are_not_prepared(not_preparing: None) -> None:
    tasks.add.enqueue_many([((i, i), {}) for i in range(4)])
    for _ in range(2):
        assert _complete(_claim(2)) == set()
    assert _prepared("UPDATE") == [] and _prepared("WITH locked") == []


@pytest.mark.usefixtures("preparing")
def test_an_alias_that_prepares_claims_and_completes_with_one_plan_each() -> None:
    """Each claim and each completion batch runs one prepared statement, planned
    once: the claim's values are written into its text, so its plan is generic
    from the start and still reads the ready index (a plan made for parameters
    could not match the index's condition)."""
    results = tasks.add.enqueue_many([((i, i), {}) for i in range(9)])
    claimed: list[Job] = []
    for _ in range(3):
        batch = _claim(3)
        assert len(batch) == 3
        assert _complete(batch) == set()
        claimed += batch
    assert sorted(job.pk for job in claimed) == sorted(int(r.id) for r in results)
    # What the claim returned is what the ORM reads of the row as claimed.
    first = claimed[0]
    assert first.state == "running" and first.worker_id == "w1" and first.lease_epoch == 1
    rows = Job.objects.filter(pk__in=[j.pk for j in claimed])
    assert {(j.state, j.return_value["n"]) for j in rows} == {("completed", j.pk) for j in rows}
    [(claim_name, claim_sql, generic, custom)] = _prepared("UPDATE")
    assert "%s" not in claim_sql and "$1" not in claim_sql  # no parameters left
    assert (generic, custom) == (3, 0), "the claim was planned once and kept"
    [(_, completion_sql, _, _)] = _prepared("WITH locked")
    assert "$1" in completion_sql
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN EXECUTE {claim_name}")
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "dj_job_ready" in plan, plan


@pytest.mark.usefixtures("preparing")
def test_a_prepared_completion_keeps_its_fence() -> None:
    """A batch whose lease moved on meanwhile is not written on the prepared path
    either: the fence is the statement's, whatever cursor runs it."""
    tasks.add.enqueue_many([((i, i), {}) for i in range(4)])
    mine = _claim(4)
    stolen = mine[1]
    Job.objects.filter(pk=stolen.pk).update(lease_epoch=stolen.lease_epoch + 1, worker_id="w2")
    assert _complete(mine) == {stolen.pk}
    states = dict(Job.objects.values_list("pk", "state"))
    assert states[stolen.pk] == "running"
    assert sorted(s for pk, s in states.items() if pk != stolen.pk) == ["completed"] * 3


@pytest.mark.usefixtures("preparing")
def test_a_logged_connection_runs_the_claim_as_written() -> None:
    """Under query logging (DEBUG, a test capturing queries) the store binds on the
    client, so the log holds each statement as it ran, not a prepared name."""
    from django.test.utils import CaptureQueriesContext

    tasks.add.enqueue_many([((i, i), {}) for i in range(2)])
    with CaptureQueriesContext(connection) as captured:
        _complete(_claim(2))
    logged = [q["sql"] for q in captured.captured_queries]
    assert any(sql.startswith('UPDATE "dispatch_jobs_job"') for sql in logged), logged
    assert any(sql.startswith("WITH locked") for sql in logged), logged


def _other_dsn() -> str:
    """The test database, for a connection of its own (a migration run beside a
    working worker)."""
    settings = connection.settings_dict
    dsn = f"host={settings['HOST'] or '127.0.0.1'} port={settings['PORT'] or 5432} "
    dsn += f"user={settings['USER']} dbname={settings['NAME']}"
    if settings.get("PASSWORD"):
        dsn += f" password={settings['PASSWORD']}"
    return dsn


@pytest.fixture
def widened_column() -> Iterator[Callable[[], None]]:
    """Changes a job column's type from another connection (as a migration run
    beside a working worker does), and restores it afterwards."""
    import psycopg

    dsn = _other_dsn()
    alter = 'ALTER TABLE "dispatch_jobs_job" ALTER COLUMN "cancel_requested_by" TYPE varchar(%d)'

    def widen() -> None:
        with psycopg.connect(dsn, autocommit=True) as other:
            other.execute(alter % 200)  # type: ignore[arg-type]

    yield widen
    with psycopg.connect(dsn, autocommit=True) as other:
        other.execute(alter % 150)  # type: ignore[arg-type]


@pytest.mark.usefixtures("preparing")
def test_prepared_statements_outlive_a_change_of_the_tables_columns(
    widened_column: Callable[[], None],
) -> None:
    """A column's type changed under a worker's prepared statements (PostgreSQL
    then refuses them: "cached plan must not change result type"): the enqueue,
    the claim and the completion each run again on a fresh connection, and
    nothing is lost or done twice."""
    tasks.add.enqueue_many([((i, i), {}) for i in range(4)])
    first = _claim(2)
    assert _complete(first) == set()
    tasks.add.enqueue(9, 9)
    widened_column()
    second = _claim(2)  # the prepared claim is refused, then runs again
    assert len(second) == 2
    late = tasks.add.enqueue(8, 8)  # the prepared INSERT likewise
    assert _complete(second) == set()
    rest = _claim(10)
    assert _complete(rest) == set()
    ids = {job.pk for job in first + second + rest}
    assert len(ids) == 6 and int(late.id) in ids
    assert set(Job.objects.values_list("state", flat=True)) == {"completed"}


@pytest.fixture
def rebuilt_indexes() -> Iterator[Callable[[bool], None]]:
    """Rebuilds the state index and the sort keys' from another connection, as
    migration 0017 does forward (``not_running``) and back, and leaves them as
    0017 leaves them."""
    import psycopg

    dsn = _other_dsn()
    definitions = {
        "dj_job_state_id": "(state, id DESC)",
        "dj_job_priority_id": "(priority, id)",
        "dj_job_created_id": "(created_at, id)",
    }

    def rebuild(not_running: bool) -> None:
        where = " WHERE NOT (state = 'running')" if not_running else ""
        with psycopg.connect(dsn, autocommit=True) as other:
            for name, columns in definitions.items():
                other.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")  # type: ignore[arg-type]
                other.execute(
                    f'CREATE INDEX CONCURRENTLY {name} ON "dispatch_jobs_job" {columns}{where}'  # type: ignore[arg-type]
                )

    yield rebuild
    rebuild(True)


@pytest.mark.usefixtures("preparing")
def test_prepared_statements_outlive_the_index_diet_run_beside_them(
    rebuilt_indexes: Callable[[bool], None],
) -> None:
    """Migration 0017 run back and forth while a worker holds its prepared claim,
    completion and INSERT: every statement goes on (PostgreSQL replans it), and
    every job is claimed once and completed once."""
    tasks.add.enqueue_many([((i, i), {}) for i in range(6)])
    first = _claim(2)
    rebuilt_indexes(False)
    assert _complete(first) == set()
    second = _claim(2)
    late = tasks.add.enqueue(8, 8)
    rebuilt_indexes(True)
    assert _complete(second) == set()
    rest = _claim(10)
    assert _complete(rest) == set()
    ids = [job.pk for job in first + second + rest]
    assert len(ids) == len(set(ids)) == 7 and int(late.id) in ids
    assert set(Job.objects.values_list("state", flat=True)) == {"completed"}
