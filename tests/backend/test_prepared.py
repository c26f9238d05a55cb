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
    _reconnect_with(0)
    yield
    _reconnect_with(None)


def _prepared_inserts() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return [row[0] for row in cursor.fetchall() if "INSERT" in row[0]]


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
