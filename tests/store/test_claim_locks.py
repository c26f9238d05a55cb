"""A claim locks only the rows it takes.

Two real connections: claimer A claims a few jobs inside a transaction it keeps
open; claimer B, on its own connection, claims meanwhile and must get every
other ready job, on the claims that sort across queues or by locality too
(where a database could lock every row it sorts, not only the ones it takes).
No job is ever handed to both.
"""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection, transaction

from dispatch_jobs.models import Job, JobState
from tests.factories import JobFactory
from tests.store.support import claim, ids

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor == "sqlite",
        reason="SQLite has one writer at a time: an open claim transaction holds the whole "
        "database, so a second claimer waits for it (by design, see docs/store.md)",
    ),
]

DEADLINE = 60.0
LEASE = timedelta(minutes=5)
HASH = "a" * 64


def make_jobs() -> list[Job]:
    """Ten ready jobs over two queues, mixed priorities, half of them local."""
    return [
        JobFactory.create(
            queue=("default", "other")[n % 2],
            priority=n % 3,
            primary_input_hash=HASH if n % 2 else "",
        )
        for n in range(10)
    ]


def claim_while_another_holds(options: dict[str, Any], held: int) -> tuple[list[Job], list[Job]]:
    """A claims ``held`` jobs and keeps its transaction open while B claims the
    rest with the same options; both on their own connections. (A's, B's)."""
    claimed, release = threading.Event(), threading.Event()
    first: list[Job] = []
    errors: list[BaseException] = []

    def hold() -> None:
        try:
            with transaction.atomic():
                first.extend(claim(limit=held, worker_id="A", lease_ttl=LEASE, **options))
                claimed.set()
                release.wait(DEADLINE)
        except BaseException as exc:  # reported by the test below
            errors.append(exc)
            claimed.set()
        finally:
            connection.close()

    second: list[Job] = []

    def take() -> None:
        try:
            second.extend(claim(limit=100, worker_id="B", lease_ttl=LEASE, **options))
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert claimed.wait(DEADLINE)
        taker = threading.Thread(target=take)
        taker.start()
        taker.join(DEADLINE)
        assert not taker.is_alive(), "B waited for A's locks"
    finally:
        release.set()
        holder.join(DEADLINE)
    assert errors == []
    return first, second


@pytest.mark.parametrize(
    "options",
    [
        pytest.param({"queues": ["default", "other"]}, id="two-queues"),
        pytest.param({"queues": ["default"], "prefer_hashes": [HASH]}, id="preferred"),
        pytest.param(
            {"queues": ["other", "default"], "prefer_hashes": [HASH]}, id="two-queues-preferred"
        ),
        pytest.param({"queues": ["default"]}, id="one-queue"),
        pytest.param({"queues": ["default", "other"], "budget": {"memory": 0}}, id="bounded"),
    ],
)
def test_a_second_claimer_gets_the_jobs_the_first_did_not_take(options: dict[str, Any]) -> None:
    jobs = make_jobs()
    ready = {job.pk for job in jobs if job.queue in options["queues"]}
    first, second = claim_while_another_holds(options, held=3)
    assert len(first) == 3
    assert set(ids(first)).isdisjoint(ids(second))
    assert set(ids(first)) | set(ids(second)) == ready
    assert Job.objects.filter(pk__in=ready, state=JobState.RUNNING).count() == len(ready)
    assert {job.worker_id for job in Job.objects.filter(pk__in=ids(second))} <= {"B"}


def test_the_first_claimer_takes_the_head_of_the_order_and_the_second_the_rest() -> None:
    """Locking only what it takes changes nothing of the order: A gets the first
    jobs of the claim order, B the rest in that order."""
    make_jobs()
    options = {"queues": ["default", "other"], "prefer_hashes": [HASH]}
    preferred = {HASH}
    expected = sorted(
        Job.objects.all(),
        key=lambda j: (-j.priority, j.primary_input_hash not in preferred, j.run_at, j.id),
    )
    first, second = claim_while_another_holds(options, held=4)
    assert ids(first) == ids(expected[:4])
    assert ids(second) == ids(expected[4:])


def test_a_claim_holds_row_locks_on_the_rows_it_took_only() -> None:
    """Counted by the database: the open claim transaction's row locks."""
    if connection.vendor != "mysql":
        pytest.skip(
            "reads InnoDB's per-transaction lock count; PostgreSQL's claim is one "
            "statement whose sub-select stops at its LIMIT (the tests above cover it)"
        )
    JobFactory.create_batch_enqueued(100, queue="default")
    JobFactory.create_batch_enqueued(100, queue="other", primary_input_hash=HASH)
    with transaction.atomic():
        taken = claim(
            queues=["default", "other"],
            limit=3,
            prefer_hashes=[HASH],
            worker_id="A",
            lease_ttl=LEASE,
        )
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT trx_rows_locked FROM information_schema.innodb_trx "
                "WHERE trx_mysql_thread_id = CONNECTION_ID()"
            )
            (locked,) = cursor.fetchone()
    assert len(taken) == 3
    assert locked == 3
