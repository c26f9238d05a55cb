"""Prefetch and the executor threads: jobs claimed ahead of free threads stay
leased (renewed by the heartbeat) and a drain hands them back unstarted; a fixed
set of threads runs the jobs, each on its own connection, closed at the end."""

from __future__ import annotations

import signal
import threading
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connections

from dispatch_jobs.models import Job, JobState, Worker, WorkerState
from dispatch_jobs.worker.executors import Executors
from dispatch_jobs.worker.inflight import Held
from tests.jobs import tasks
from tests.worker.processes import FAST, wait_until
from tests.worker.support import enqueue

pytestmark = pytest.mark.django_db(transaction=True)


def started(directory: Path) -> set[int]:
    return {int(p.name.split("-")[1]) for p in directory.glob("start-*")}


@pytest.mark.slow
def test_prefetched_jobs_stay_leased_and_a_drain_hands_them_back_unstarted(workers, tmp_path):
    ids = [enqueue(tasks.hold, str(tmp_path)).pk for _ in range(6)]
    proc = workers("--concurrency", "2", "--prefetch", "4", "--worker-id", "pf", *FAST)
    wait_until(lambda: len(started(tmp_path)) == 2, what="two jobs running")
    held = Job.objects.filter(pk__in=ids, state=JobState.RUNNING, worker_id="pf")
    wait_until(lambda: held.count() == 6, what="all six claimed: two running, four prefetched")
    first = dict(held.values_list("pk", "lease_expires_at"))
    # The prefetched jobs' leases (2 s) are renewed while they wait for a thread.

    def renewed(pk: int) -> bool:
        now, then = Job.objects.get(pk=pk).lease_expires_at, first[pk]
        return now is not None and then is not None and now > then + timedelta(seconds=1)

    wait_until(
        lambda: all(renewed(pk) for pk in ids),
        what="every lease renewed, the waiting ones included",
    )
    assert Job.objects.filter(pk__in=ids, evict_count=0).count() == 6

    proc.send(signal.SIGTERM)
    wait_until(
        lambda: Worker.objects.filter(id="pf", state=WorkerState.DRAINING).exists(),
        what="the worker draining",
    )
    (tmp_path / "release").touch()  # the two running jobs may finish now
    assert proc.wait() == 0

    ran = started(tmp_path)
    assert len(ran) == 2
    for job in Job.objects.filter(pk__in=ids):
        if job.pk in ran:
            assert job.state == JobState.COMPLETED and job.evict_count == 0
        else:
            # Handed back as a drain does: a new epoch, never a retry, never run.
            assert job.state == JobState.PENDING and job.worker_id == ""
            assert (job.evict_count, job.retry_count) == (1, 0)
            assert [a["status"] for a in job.attempts] == ["handed_back"]


def test_a_fixed_set_of_threads_runs_the_jobs_each_on_its_own_connection():
    seen: list[tuple[threading.Thread, object]] = []
    lock = threading.Lock()

    def run(held: Held) -> None:
        connection = connections["default"]  # this thread's own connection
        connection.ensure_connection()
        with lock:
            seen.append((threading.current_thread(), connection))

    executors = Executors(2, run)
    executors.start()
    for n in range(10):
        executors.submit(Held(job=Job(pk=n + 1), epoch=1, ttl=timedelta(seconds=30)))
    executors.stop(30)

    assert len(seen) == 10
    threads = {thread for thread, _ in seen}
    wrappers = {id(wrapper): wrapper for _, wrapper in seen}
    assert len(threads) <= 2 and len(wrappers) == len(threads)
    assert not any(thread.is_alive() for thread in threads)
    # Each thread closed its connection when it stopped.
    assert all(getattr(wrapper, "connection", None) is None for wrapper in wrappers.values())
