"""Cancelling a running job, with a real ``runjobs`` process: the worker sees
the request at its next heartbeat, the handler's context reports it, and the job
ends cancelled with who asked, once, never to run again."""

from __future__ import annotations

from pathlib import Path

import pytest

from dispatch_jobs import store
from dispatch_jobs.models import Job, JobState, Usage
from tests.jobs import tasks
from tests.worker.processes import FAST, wait_until
from tests.worker.support import enqueue

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def _state(job: Job) -> str:
    job.refresh_from_db()
    return job.state


def test_a_cooperative_handler_is_stopped_and_the_job_ends_cancelled(workers, tmp_path: Path):
    job = enqueue(tasks.hold, str(tmp_path))
    beside = enqueue(tasks.hold, str(tmp_path))
    proc = workers("--worker-id", "runner", *FAST)
    wait_until(lambda: (tmp_path / f"start-{job.pk}").exists(), what="the job running")
    wait_until(lambda: (tmp_path / f"start-{beside.pk}").exists(), what="its neighbour running")

    report = store.cancel_jobs([job.pk], by="ops-alice")
    assert report.requested == [job.pk]

    wait_until(lambda: _state(job) == JobState.CANCELLED, what="the job cancelled")
    marker = tmp_path / f"cancelled-{job.pk}"
    wait_until(lambda: marker.exists() and marker.read_text().strip(), what="the handler told")
    assert marker.read_text().strip() == "JobCancelled"
    assert "ops-alice" in job.last_error and job.completed_at is not None
    assert [a["status"] for a in job.attempts] == ["cancelled"]
    assert "cancel requested by ops-alice" in proc.log()
    # Its attempt is measured like any other; its neighbour runs on, untouched.
    assert Usage.objects.get(job_id=job.pk).status == JobState.CANCELLED
    assert _state(beside) == JobState.RUNNING
    (tmp_path / "release").touch()
    wait_until(lambda: _state(beside) == JobState.COMPLETED, what="the neighbour finishing")
    assert not (tmp_path / f"done-{job.pk}").exists()  # the cancelled job never finished


def test_a_handler_that_ignores_the_request_still_ends_cancelled(workers, tmp_path: Path):
    job = enqueue(tasks.busy_sleep, 2.0)
    workers("--worker-id", "stubborn", *FAST)
    wait_until(lambda: _state(job) == JobState.RUNNING, what="the job running")
    assert store.cancel_jobs([job.pk], by="ops-bob").requested == [job.pk]
    wait_until(lambda: _state(job) == JobState.CANCELLED, timeout=30, what="the job cancelled")
    assert job.return_value is None and "ops-bob" in job.last_error
    assert job.attempts[-1]["message"] == "returned after its cancel request"
