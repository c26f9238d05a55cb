"""Transient database errors never cancel a job: the worker's connections are
killed by the server mid-job, and the job still completes once, unevicted."""

from __future__ import annotations

import time

import pytest
from django.db import connection

from dispatch_jobs.models import Job, JobState
from tests.jobs import tasks
from tests.worker.processes import FAST, wait_until
from tests.worker.support import enqueue

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def kill_other_connections() -> int:
    """Have the server drop every other session on the test database."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            return int(cursor.fetchone()[0])
        cursor.execute(
            "SELECT id FROM information_schema.processlist "
            "WHERE db = DATABASE() AND id <> CONNECTION_ID()"
        )
        ids = [row[0] for row in cursor.fetchall()]
        for session in ids:
            cursor.execute(f"KILL {int(session)}")
        return len(ids)


@pytest.mark.skipif(
    connection.vendor == "sqlite",
    reason="SQLite has no server sessions to drop; its transient error (a busy file) "
    "is waited out by the busy timeout",
)
def test_dropped_connections_do_not_cancel_or_evict_a_running_job(workers, tmp_path):
    job = enqueue(tasks.hold, str(tmp_path))
    proc = workers(*FAST)
    wait_until(lambda: (tmp_path / f"start-{job.pk}").exists(), what="the job running")
    wait_until(lambda: "Maintenance: now the leader" in proc.log(), what="maintenance")
    for _ in range(3):  # three rounds, each once the worker has reconnected
        wait_until(lambda: kill_other_connections() >= 1, what="worker connections to drop")
        time.sleep(0.5)
    wait_until(lambda: "Transient database error" in proc.log(), what="the worker noticing")
    (tmp_path / "release").touch()
    wait_until(lambda: Job.objects.get(pk=job.pk).state == JobState.COMPLETED, what="done")
    job.refresh_from_db()
    assert job.evict_count == 0 and job.retry_count == 0
    assert [a["status"] for a in job.attempts] == ["completed"]
    assert not (tmp_path / f"cancelled-{job.pk}").exists()
    assert proc.alive()
