"""The database's clock decides readiness and ownership, never the worker's."""

from __future__ import annotations

from datetime import UTC, timedelta

import pytest
from django.db import connection, connections

from dispatch_jobs import store
from dispatch_jobs.models import Job
from tests.factories import JobFactory

pytestmark = pytest.mark.django_db


def test_database_now_is_aware_utc() -> None:
    now = store.db.database_now()
    assert now.tzinfo is not None and now.utcoffset() == timedelta(0)
    assert now.tzinfo == UTC


def test_database_now_agrees_with_the_clock_the_queries_use() -> None:
    """database_now() and Now() inside a query read the same clock."""
    job = JobFactory.create()  # created_at is the database's Now() at insert
    created = Job.objects.get(pk=job.pk).created_at
    assert abs(store.db.database_now() - created) < timedelta(seconds=5)


def test_default_run_at_is_ready_at_once() -> None:
    """A job enqueued without run_at is due by the database clock immediately."""
    job = JobFactory.create()
    assert [j.pk for j in store.claim_jobs(store.ClaimOptions(queues=["default"], limit=1))] == [
        job.pk
    ]


def test_mysql_sessions_run_in_utc() -> None:
    """NOW() answers in the session's zone on MySQL/MariaDB; the store pins it to
    UTC, the zone Django stores datetimes in, on every new connection."""
    if connection.vendor != "mysql":
        pytest.skip(
            f"only MySQL/MariaDB answer NOW() in a session zone; {connection.vendor}'s "
            "comparisons do not depend on one"
        )
    fresh = connections.create_connection("default")
    try:
        with fresh.cursor() as cursor:
            cursor.execute(
                "SELECT @@session.time_zone, TIMESTAMPDIFF(SECOND, NOW(6), UTC_TIMESTAMP(6))"
            )
            zone, skew = cursor.fetchone()
    finally:
        fresh.close()
    assert zone == "+00:00"
    assert skew == 0
