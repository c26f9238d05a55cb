"""The retention purge deletes only rows that are finished and expired when they
are deleted: a job replayed by another session while the purge runs survives.

Two real connections: a second session replays an expired dead letter inside a
transaction it keeps open while the purge runs, then commits.
"""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.db import connection, transaction

from dispatch_jobs import store
from dispatch_jobs.models import Job, JobState
from tests.factories import JobFactory
from tests.store.support import db_now

pytestmark = pytest.mark.django_db(transaction=True)

DEADLINE = 60.0
RETENTION = {"completed_retention": timedelta(days=1), "failed_retention": timedelta(days=1)}


def waiting_on_a_lock() -> bool:
    """Whether another session of the test database is stuck on a write (on
    MariaDB a write waiting for a row lock shows as "Updating"; innodb_trx does
    not list it before it holds a lock)."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE datname = current_database() AND wait_event_type = 'Lock'"
            )
        else:
            cursor.execute(
                "SELECT count(*) FROM information_schema.processlist WHERE db = DATABASE() "
                "AND id <> CONNECTION_ID() AND command = 'Query' AND state = 'Updating'"
            )
        return bool(cursor.fetchone()[0])


@pytest.mark.skipif(
    connection.vendor == "sqlite",
    reason="SQLite has one writer at a time: a replay's open write transaction holds the "
    "whole database, so the purge cannot run between its read and the replay's commit",
)
def test_a_row_replayed_during_the_purge_is_not_deleted() -> None:
    old = db_now(-timedelta(days=10))
    replayed = JobFactory.create(state=JobState.FAILED, completed_at=old)
    expired = JobFactory.create(state=JobState.FAILED, completed_at=old)
    changed, release = threading.Event(), threading.Event()

    def replay() -> None:
        """Another session: put the dead letter back to pending, commit later."""
        try:
            with transaction.atomic():
                Job.objects.filter(pk=replayed.pk).update(state=JobState.PENDING, completed_at=None)
                changed.set()
                release.wait(DEADLINE)
        finally:
            connection.close()

    purged: list[int] = []

    def purge() -> None:
        try:
            purged.append(store.purge_finished_jobs(limit=10, **RETENTION))
        finally:
            connection.close()

    replayer = threading.Thread(target=replay)
    replayer.start()
    assert changed.wait(DEADLINE)
    purger = threading.Thread(target=purge)
    purger.start()
    # Let the purge get as far as it goes while the replay is uncommitted: either
    # it is done (it skipped the locked row) or it waits for that row's lock.
    end = time.monotonic() + DEADLINE
    while purger.is_alive() and not waiting_on_a_lock() and time.monotonic() < end:
        time.sleep(0.02)
    release.set()
    replayer.join(DEADLINE)
    purger.join(DEADLINE)
    assert not purger.is_alive() and not replayer.is_alive()
    assert purged == [1]
    assert not Job.objects.filter(pk=expired.pk).exists()
    row = Job.objects.get(pk=replayed.pk)  # survived, as the replay left it
    assert (row.state, row.completed_at) == (JobState.PENDING, None)


def test_the_purge_keeps_unfinished_rows_whatever_their_completed_at() -> None:
    """Finished state and age together decide: a running or pending row with an
    old ``completed_at`` (left by an earlier attempt) is not a dead letter."""
    old = db_now(-timedelta(days=10))
    JobFactory.create(state=JobState.COMPLETED, completed_at=old)
    JobFactory.create(state=JobState.RUNNING, completed_at=old)
    JobFactory.create(state=JobState.PENDING, completed_at=old)
    assert store.purge_finished_jobs(limit=10, **RETENTION) == 1
    assert set(Job.objects.values_list("state", flat=True)) == {
        JobState.RUNNING,
        JobState.PENDING,
    }
