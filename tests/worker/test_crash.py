"""Crash recovery with real processes: kill -9, SIGSTOP past the TTL, SIGTERM
drains, poison jobs, lost leases, abandoned timeouts.

Every test ends by checking the invariants: no job completed twice, none lost,
none left running without a lease.
"""

from __future__ import annotations

import signal
import time
from datetime import timedelta
from pathlib import Path

import pytest

from dispatch_jobs import store
from dispatch_jobs.models import Job, JobState, Usage, Worker, WorkerState
from tests.jobs import tasks
from tests.store.support import db_now
from tests.worker.processes import FAST, wait_until
from tests.worker.support import enqueue

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def started(directory: Path) -> int:
    return len(list(directory.glob("start-*")))


def assert_invariants(job_ids: list[int]) -> None:
    for job in Job.objects.filter(pk__in=job_ids):
        completed = [a for a in job.attempts if a["status"] == "completed"]
        assert len(completed) <= 1, f"job {job.pk} completed twice: {job.attempts}"
        assert not (job.state == JobState.RUNNING and job.lease_expires_at is None)
    assert Job.objects.filter(pk__in=job_ids).count() == len(job_ids)


def test_kill_9_with_50_leased_jobs_all_complete_exactly_once_elsewhere(workers, tmp_path):
    jobs = [enqueue(tasks.hold, str(tmp_path)) for _ in range(50)]
    ids = [j.pk for j in jobs]
    victim = workers("--concurrency", "50", "--worker-id", "victim", *FAST)
    wait_until(lambda: started(tmp_path) == 50, what="50 jobs running on the victim")
    assert Job.objects.filter(worker_id="victim", state=JobState.RUNNING).count() == 50
    victim.send(signal.SIGKILL)
    victim.wait()
    (tmp_path / "release").touch()
    workers("--concurrency", "50", "--worker-id", "rescuer", *FAST)
    wait_until(
        lambda: Job.objects.filter(pk__in=ids, state=JobState.COMPLETED).count() == 50,
        timeout=60,
        what="all 50 completed",
    )
    for job in Job.objects.filter(pk__in=ids):
        assert job.evict_count == 1 and job.retry_count == 0
        assert job.lease_epoch == 3  # granted, reclaimed, granted again
        # The eviction is an entry of its own (the dead worker's), then the run.
        assert [a["status"] for a in job.attempts] == ["evicted", "completed"]
        assert job.attempts[1]["worker_id"].startswith("rescuer")
    # Usage is recorded just after the outcomes (best-effort, same worker).
    wait_until(lambda: Usage.objects.filter(job_id__in=ids).count() == 50, what="usage")
    assert_invariants(ids)


def test_sigstop_past_the_ttl_then_sigcont_late_writes_change_nothing(workers, tmp_path):
    jobs = [enqueue(tasks.hold, str(tmp_path)) for _ in range(4)]
    ids = [j.pk for j in jobs]
    paused = workers("--concurrency", "4", "--worker-id", "paused", "--no-maintenance", *FAST)
    wait_until(lambda: started(tmp_path) == 4, what="4 jobs running on the paused worker")
    workers("--concurrency", "4", "--worker-id", "other", *FAST)
    wait_until(lambda: Worker.objects.filter(id="other").exists(), what="the other worker")
    for _ in range(5):
        paused.send(signal.SIGSTOP)
        try:
            wait_until(
                lambda: Job.objects.filter(pk__in=ids, evict_count=1).count() == 4, timeout=20
            )
            break
        except AssertionError:
            # Stopped inside a lease renewal: its open transaction still locks the
            # rows (exactly what a real pause does). Let it finish, then stop again.
            # Its handlers wait for the release file, so none can finish meanwhile.
            paused.send(signal.SIGCONT)
            time.sleep(0.05)
    else:
        pytest.fail("the paused worker's jobs were never reclaimed")
    (tmp_path / "release").touch()
    wait_until(
        lambda: Job.objects.filter(pk__in=ids, state=JobState.COMPLETED).count() == 4,
        what="the other worker completing all 4",
    )
    wait_until(lambda: Usage.objects.filter(job_id__in=ids).count() == 4, what="usage")
    before = {row["id"]: row for row in Job.objects.filter(pk__in=ids).values()}
    usage_before = Usage.objects.count()
    paused.send(signal.SIGCONT)
    # Its handlers see the release file and return, its completer tries to write,
    # its heartbeat learns the leases are gone: the fence refuses every write.
    wait_until(lambda: "lease lost" in paused.log(), what="the paused worker noticing")
    paused.send(signal.SIGTERM)
    assert paused.wait() == 0
    after = {row["id"]: row for row in Job.objects.filter(pk__in=ids).values()}
    assert after == before
    assert Usage.objects.count() == usage_before
    for job in Job.objects.filter(pk__in=ids):
        assert [a["status"] for a in job.attempts] == ["evicted", "completed"]
        assert job.attempts[-1]["worker_id"] == "other"
    assert_invariants(ids)


def test_sigterm_drains_short_jobs_and_hands_long_ones_back(workers, tmp_path):
    short = [enqueue(tasks.nap, 0.5, str(tmp_path)) for _ in range(2)]
    long = [enqueue(tasks.hold, str(tmp_path)) for _ in range(2)]
    proc = workers("--concurrency", "4", "--shutdown-grace", "2", "--worker-id", "drainer", *FAST)
    wait_until(lambda: started(tmp_path) == 4, what="4 jobs running")
    proc.send(signal.SIGTERM)
    assert proc.wait(30) == 0, proc.log()
    for job in Job.objects.filter(pk__in=[j.pk for j in short]):
        assert job.state == JobState.COMPLETED
    for job in Job.objects.filter(pk__in=[j.pk for j in long]):
        assert job.state == JobState.PENDING
        assert job.evict_count == 1
        assert job.retry_count == 0
        assert job.lease_epoch == 2
        assert job.worker_id == "" and job.lease_expires_at is None
        assert [(a["status"], a["worker_id"]) for a in job.attempts] == [("handed_back", "drainer")]
    assert "Handed back 2 unfinished job(s)" in proc.log()
    assert_invariants([j.pk for j in short + long])


def test_a_second_signal_hands_back_at_once(workers, tmp_path):
    job = enqueue(tasks.hold, str(tmp_path))
    proc = workers("--shutdown-grace", "600", *FAST)
    wait_until(lambda: started(tmp_path) == 1, what="the job running")
    proc.send(signal.SIGTERM)
    wait_until(
        lambda: Worker.objects.filter(state=WorkerState.DRAINING).exists(),
        what="the worker marked draining in the registry",
    )
    proc.send(signal.SIGINT)
    assert proc.wait(30) == 0, proc.log()
    job.refresh_from_db()
    assert (job.state, job.evict_count, job.retry_count) == (JobState.PENDING, 1, 0)


def test_poison_job_fails_after_max_evictions(workers):
    poison = enqueue(tasks.kill_own_process)
    innocent = enqueue(tasks.add, 1, 1, priority=-1)
    deaths = 0

    def poison_failed() -> bool:
        return Job.objects.get(pk=poison.pk).state == JobState.FAILED

    # Each worker claims the poison job and dies, until one reclaims it a third
    # time and fails it instead.
    for _ in range(8):
        proc = workers("--max-evictions", "2", "--concurrency", "1", *FAST)
        wait_until(lambda: not proc.alive() or poison_failed(), what="death or failure")  # noqa: B023
        if not proc.alive():
            assert proc.wait() == -signal.SIGKILL
            deaths += 1
        if poison_failed():
            break
    poison.refresh_from_db()
    assert deaths == 3
    assert poison.evict_count == 3
    assert poison.retry_count == 0
    assert "poison" in poison.last_error
    wait_until(
        lambda: Job.objects.get(pk=innocent.pk).state == JobState.COMPLETED,
        what="the innocent job still running",
    )


def test_lease_lost_cancels_the_handler_and_discards_its_outcome(workers, tmp_path):
    job = enqueue(tasks.hold, str(tmp_path))
    proc = workers("--worker-id", "holder", *FAST)
    wait_until(lambda: started(tmp_path) == 1, what="the job running")
    store.pause_queue("default")  # so the worker does not simply claim it again
    job.refresh_from_db()
    [returned] = store.release_leases("holder", [(job.pk, job.lease_epoch)])
    assert returned.state == JobState.PENDING
    marker = tmp_path / f"cancelled-{job.pk}"
    # The file appears before its text is written: wait for the text.
    wait_until(
        lambda: marker.exists() and marker.read_text().strip(),
        what="the handler observing its cancellation",
    )
    assert marker.read_text().strip() == "JobCancelled"
    (tmp_path / "release").touch()
    wait_until(lambda: "lease lost" in proc.log(), what="the worker logging the loss")
    job.refresh_from_db()
    assert job.state == JobState.PENDING
    # The hand-back is the only entry: the discarded outcome wrote nothing.
    assert [a["status"] for a in job.attempts] == ["handed_back"] and job.retry_count == 0
    assert not Usage.objects.filter(job_id=job.pk).exists()


def test_cooperative_timeout_is_recorded_as_a_retryable_failure(workers):
    job = enqueue(tasks.nap, 30, timeout=timedelta(milliseconds=300), max_retries=1)
    workers(*FAST)
    wait_until(lambda: Job.objects.get(pk=job.pk).state == JobState.FAILED, what="two timeouts")
    job.refresh_from_db()
    assert [a["status"] for a in job.attempts] == ["timeout", "timeout"]
    assert job.attempts[0]["exception_class"] == "dispatch_jobs.exceptions.JobTimedOut"
    assert job.retry_count == 1 and job.evict_count == 0


def test_a_handler_ignoring_its_timeout_is_abandoned_and_recorded(workers):
    job = enqueue(tasks.busy_sleep, 30, timeout=timedelta(milliseconds=300), max_retries=0)
    workers(*FAST)
    wait_until(lambda: Job.objects.get(pk=job.pk).state == JobState.FAILED, what="the timeout")
    job.refresh_from_db()
    [attempt] = job.attempts
    assert attempt["status"] == "timeout"
    assert "abandoned" in attempt["message"]
    wait_until(lambda: Usage.objects.filter(job_id=job.pk).exists(), what="usage")
    assert Usage.objects.get(job_id=job.pk).status == JobState.FAILED


def test_each_lease_is_renewed_with_its_own_ttl(workers, tmp_path):
    long_ttl = enqueue(tasks.hold, str(tmp_path), lease_ttl=timedelta(seconds=60))
    default_ttl = enqueue(tasks.hold, str(tmp_path))
    workers("--concurrency", "2", *FAST)
    wait_until(lambda: started(tmp_path) == 2, what="both running")

    def renewed() -> bool:
        rows = {j.pk: j for j in Job.objects.filter(pk__in=[long_ttl.pk, default_ttl.pk])}
        now = db_now()
        # The claim granted --lease-ttl (2 s) to both; the heartbeat extends each by
        # its own TTL: the row's lease_ttl, else the worker's default.
        long_expiry = rows[long_ttl.pk].lease_expires_at
        default_expiry = rows[default_ttl.pk].lease_expires_at
        assert long_expiry is not None and default_expiry is not None
        return long_expiry > now + timedelta(seconds=30) and default_expiry <= now + timedelta(
            seconds=2
        )

    wait_until(renewed, what="per-job renewal")
    (tmp_path / "release").touch()
    wait_until(lambda: Job.objects.filter(state=JobState.COMPLETED).count() == 2, what="both done")
