"""Workers stay visible: a real ``runjobs`` process whose registry row is deleted
(after its connections were dropped, as a database restart does) registers
again; one whose claims keep failing says so as an ERROR, on its row, and in
the admin's workers view, and recovers when the claims succeed again."""

from __future__ import annotations

import os
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.db import connection, transaction
from django.db.models import F
from django.test import Client, override_settings
from django.urls import reverse

from dispatch_jobs import store
from dispatch_jobs.models import Job, JobState, Worker
from tests.jobs import tasks
from tests.worker.processes import FAST, wait_until
from tests.worker.support import enqueue
from tests.worker.test_transient import kill_other_connections

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

HEARTBEAT = 0.5  # FAST's --heartbeat
TABLE = Job._meta.db_table


def test_a_worker_whose_row_was_deleted_registers_again(workers) -> None:
    proc = workers("--worker-id", "comes-back", *FAST)
    wait_until(
        lambda: Worker.objects.filter(id="comes-back", last_seen_at__gt=F("started_at")).exists(),
        what="a heartbeat's touch (its connection open)",
    )
    if connection.vendor != "sqlite":
        # A restart drops every session: the idle worker's heartbeat connection
        # is broken, and with no lease to renew only the registry touch uses it.
        wait_until(lambda: kill_other_connections() >= 1, what="worker connections to drop")
        wait_until(
            lambda: "Worker registry: failed touching the worker row" in proc.log(),
            what="a touch on the dropped connection",
        )
    store.deregister_worker("comes-back")  # removed as stale meanwhile
    wait_until(lambda: Worker.objects.filter(id="comes-back").exists(), what="re-registration")
    assert proc.alive()
    job = enqueue(tasks.add, 2, 3)  # and it still works
    wait_until(lambda: Job.objects.get(pk=job.pk).state == JobState.COMPLETED, what="the job")


@contextmanager
def failing_claims() -> Iterator[None]:
    """Make every claim fail with a transient error while the registry (another
    table) stays writable and the job table readable:

    - PostgreSQL: another session holds the job table in EXCLUSIVE mode (reads
      pass, row locks and writes wait) and the worker's ``lock_timeout`` is short;
    - MariaDB: another session holds ``LOCK TABLES ... READ`` and the worker's
      ``lock_wait_timeout`` is short;
    - SQLite: a trigger makes any update of a job row fail ("no such table").
    """
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute(
                f"CREATE TRIGGER refuse_claims BEFORE UPDATE ON {TABLE} "
                "BEGIN SELECT * FROM claims_refused_by_the_test; END"
            )
        try:
            yield
        finally:
            with connection.cursor() as cursor:
                cursor.execute("DROP TRIGGER refuse_claims")
        return
    locked, release = threading.Event(), threading.Event()

    def hold() -> None:
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                if connection.vendor == "postgresql":
                    cursor.execute(f"LOCK TABLE {TABLE} IN EXCLUSIVE MODE")
                else:
                    cursor.execute(f"LOCK TABLES {TABLE} READ")
                locked.set()
                release.wait(120)
                if connection.vendor == "mysql":
                    cursor.execute("UNLOCK TABLES")
        finally:
            locked.set()
            connection.close()

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert locked.wait(60)
        yield
    finally:
        release.set()
        holder.join(60)


def short_lock_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker process's connections give up on a lock after a moment."""
    url = os.environ.get("DATABASE_URL", "")
    if connection.vendor == "postgresql":
        query = {"options": "-c lock_timeout=300"}
    elif connection.vendor == "mysql":
        query = {"init_command": "SET SESSION lock_wait_timeout = 1"}
    else:
        query = {}
    if url:
        monkeypatch.setenv("DATABASE_URL", f"{url}?{urllib.parse.urlencode(query)}")


def test_a_worker_whose_claims_keep_failing_is_loud_and_shown_unhealthy(
    workers, monkeypatch
) -> None:
    job = enqueue(tasks.add, 1, 1)  # something to claim, so the claim gets as far as a lock
    short_lock_waits(monkeypatch)
    client = Client()
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
    page = reverse("admin:dispatch_jobs_worker_changelist")
    with failing_claims():
        proc = workers("--worker-id", "failing", *FAST)
        wait_until(lambda: "Claims have been failing for" in proc.log(), what="an ERROR line")
        line = next(x for x in proc.log().splitlines() if "Claims have been failing" in x)
        assert "ERROR" in line and "OperationalError" in line, line
        wait_until(
            lambda: Worker.objects.filter(id="failing", claim_error__isnull=False).exists(),
            what="the error on the worker row",
        )
        with override_settings(DISPATCH_JOBS={"HEARTBEAT_INTERVAL": timedelta(seconds=HEARTBEAT)}):
            wait_until(
                lambda: b"unhealthy: OperationalError" in client.get(page).content,
                what="the workers view flagging it",
            )
        assert Job.objects.get(pk=job.pk).state == JobState.PENDING
    # Claims succeed again: the job runs and the row is cleared.
    wait_until(lambda: Job.objects.get(pk=job.pk).state == JobState.COMPLETED, what="the job")
    wait_until(
        lambda: Worker.objects.filter(id="failing", claim_error__isnull=True).exists(),
        what="the error cleared",
    )
    assert b"dj-unhealthy-flag" not in client.get(page).content
    assert "Claims succeed again" in proc.log()
    assert proc.alive()
