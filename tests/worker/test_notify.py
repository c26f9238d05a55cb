"""PostgreSQL LISTEN/NOTIFY: enqueue notifies once per transaction and queue, at
commit; an idle worker wakes at once instead of waiting out its poll interval."""

from __future__ import annotations

import time

import pytest
from django.db import connection, transaction

from dispatch_jobs import store
from dispatch_jobs.models import Job, JobState
from dispatch_jobs.worker.pacing import Pacer, _connect_kwargs
from tests.jobs import tasks
from tests.worker.processes import wait_until
from tests.worker.support import enqueue

pytestmark = pytest.mark.django_db(transaction=True)

postgres_only = pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="LISTEN/NOTIFY is PostgreSQL-only; other databases wake by polling alone",
)


def test_pacer_backs_off_to_the_maximum_and_resets_when_busy():
    from datetime import timedelta

    pacer = Pacer(timedelta(seconds=1), timedelta(seconds=5))
    assert [pacer.idle() for _ in range(5)] == [1, 2, 4, 5, 5]
    pacer.busy()
    assert pacer.idle() == 1


def _received(conn) -> list[str]:
    return [note.payload for note in conn.notifies(timeout=0.5)]


@postgres_only
def test_enqueue_notifies_once_per_transaction_and_queue_at_commit():
    import psycopg

    with psycopg.connect(**_connect_kwargs(), autocommit=True) as listener:
        listener.execute(f'LISTEN "{store.NOTIFY_CHANNEL}"')
        with transaction.atomic():
            for _ in range(3):
                enqueue(tasks.add, 1, 1)
            enqueue(tasks.add, 1, 1, queue="other")
            store.enqueue_jobs([Job(name=tasks.add.module_path, payload={}) for _ in range(2)])
        assert sorted(_received(listener)) == ["default", "other"]
        with pytest.raises(RuntimeError), transaction.atomic():
            enqueue(tasks.add, 1, 1)
            raise RuntimeError("roll back")
        assert _received(listener) == []
        enqueue(tasks.add, 1, 1)  # autocommit: one notification of its own
        assert _received(listener) == ["default"]


@postgres_only
def test_a_bulk_enqueue_notifies_each_of_its_queues_once_at_commit():
    """A many-row INSERT sends its notification once per queue of its rows, in
    autocommit and in the caller's transaction alike."""
    import psycopg

    with psycopg.connect(**_connect_kwargs(), autocommit=True) as listener:
        listener.execute(f'LISTEN "{store.NOTIFY_CHANNEL}"')
        results = tasks.add.enqueue_many([((i, i), {}) for i in range(5)])
        assert _received(listener) == ["default"]
        mixed = store.NewJobs(3, {"name": tasks.add.module_path}, {"queue": ["a", "b", "a"]})
        made = store.insert_jobs(mixed)
        assert sorted(_received(listener)) == ["a", "b"]
        with transaction.atomic():
            tasks.add.enqueue_many([((i, i), {}) for i in range(3)])
            assert _received(listener) == []
        assert _received(listener) == ["default"]
    rows = Job.objects.filter(pk__in=[int(r.id) for r in results]).order_by("pk")
    assert [(str(j.pk), j.created_at) for j in rows] == [(r.id, r.enqueued_at) for r in results]
    queues = Job.objects.filter(pk__in=[row[0] for row in made]).order_by("pk")
    assert [j.queue for j in queues] == ["a", "b", "a"]


@postgres_only
def test_an_idle_worker_wakes_on_notify_well_before_its_poll_interval(workers):
    proc = workers(
        "--poll-interval",
        "30",
        "--max-poll-interval",
        "30",
        "--lease-ttl",
        "2",
        "--heartbeat",
        "0.5",
    )
    wait_until(lambda: "Listening for enqueue notifications" in proc.log(), what="LISTEN")
    time.sleep(0.5)  # let the first (empty) poll pass: the worker is now asleep for 30 s
    job = enqueue(tasks.add, 2, 2)
    start = time.monotonic()
    wait_until(
        lambda: Job.objects.get(pk=job.pk).state == JobState.COMPLETED,
        timeout=20,
        what="the notified worker to run the job before its 30 s poll",
    )
    latency = time.monotonic() - start
    print(f"NOTIFY wake-up latency: {latency * 1000:.0f} ms")
