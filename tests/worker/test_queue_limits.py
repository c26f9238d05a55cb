"""Queue limits across real ``runjobs`` processes: a fleet-wide cap never
exceeded while four workers drain a queue, a rate that holds over a measured
window, and a limit changed while the workers run (docs/how-to/limits.md)."""

from __future__ import annotations

import signal
from datetime import timedelta
from pathlib import Path

import pytest

from dispatch_jobs import store
from dispatch_jobs.models import Job, JobState
from dispatch_jobs.queue_limits import QueueLimits
from dispatch_jobs.store import ClaimOptions
from tests.jobs import flow
from tests.worker.processes import FAST, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

QUEUE = "low"  # in TASKS' QUEUES (tests/settings.py): every worker serves it


def _fill(count: int, directory: Path, seconds: float, phase: str = "") -> list[int]:
    jobs = store.enqueue_jobs(
        [
            Job(
                name=flow.sample_running.module_path,
                queue=QUEUE,
                payload={"args": [str(directory), QUEUE, seconds], "kwargs": {"phase": phase}},
            )
            for _ in range(count)
        ]
    )
    return [job.pk for job in jobs]


def _samples(directory: Path, phase: str = "") -> list[tuple[int, int]]:
    """(handlers running alongside, rows running in the database) per job run."""
    lines = (directory / f"samples{phase}").read_text().split()
    return [(int(a), int(b)) for a, b in zip(lines[::2], lines[1::2], strict=True)]


def _drained(ids: list[int]) -> bool:
    return Job.objects.filter(pk__in=ids, state=JobState.COMPLETED).count() == len(ids)


def _stop(procs) -> None:  # noqa: ANN001
    for proc in procs:
        proc.send(signal.SIGTERM)
    for proc in procs:
        assert proc.wait() == 0, proc.log()


def test_four_workers_draining_500_jobs_never_run_more_than_3(workers, tmp_path):
    store.set_queue_limits(QUEUE, QueueLimits(max_running=3))
    ids = _fill(500, tmp_path, 0.01)
    procs = [workers("--concurrency", "4", *FAST) for _ in range(4)]
    wait_until(lambda: _drained(ids), what="500 jobs done")
    _stop(procs)
    samples = _samples(tmp_path)
    assert len(samples) == 500  # each job ran once
    assert max(alongside for alongside, _ in samples) <= 3
    assert max(running for _, running in samples) <= 3
    # The cap was reached (16 slots were offered): the bound is what held it.
    assert max(running for _, running in samples) == 3
    # More than one worker took part.
    assert Job.objects.filter(pk__in=ids).values("worker_id").distinct().count() > 1


def test_a_rate_limit_holds_over_every_window_of_its_period(workers, tmp_path):
    rate, period = 5, timedelta(seconds=1)
    store.set_queue_limits(QUEUE, QueueLimits(rate_limit=rate, rate_period=period))
    ids = _fill(30, tmp_path, 0.0)
    procs = [workers("--concurrency", "4", *FAST) for _ in range(4)]
    wait_until(lambda: _drained(ids), what="30 jobs done")
    _stop(procs)
    starts = sorted(Job.objects.filter(pk__in=ids).values_list("started_at", flat=True))
    # Every window of one period opening at a start holds at most `rate` starts
    # (within one job of it, as the bound promises), and the bound was reached.
    most = max(sum(1 for s in starts if t <= s < t + period) for t in starts)
    assert rate <= most <= rate + 1, most
    assert most == rate
    # The measured span: 30 starts at 5 a second need more than 5 seconds.
    assert starts[-1] - starts[0] > (len(starts) // rate - 1) * period


def test_a_limit_changed_while_workers_run_holds_from_their_next_claim(workers, tmp_path):
    store.set_queue_limits(QUEUE, QueueLimits(max_running=1))
    first = _fill(20, tmp_path, 0.02, phase="1")
    procs = [workers("--concurrency", "3", *FAST) for _ in range(3)]
    wait_until(lambda: _drained(first), what="the first 20 jobs")
    assert max(running for _, running in _samples(tmp_path, "1")) == 1
    store.set_queue_limits(QUEUE, QueueLimits(max_running=4))  # while they run
    second = _fill(80, tmp_path, 0.05, phase="2")
    wait_until(lambda: _drained(second), what="the next 80 jobs")
    _stop(procs)
    during = [running for _, running in _samples(tmp_path, "2")]
    assert 1 < max(during) <= 4
    # And lowered again: the next claims stop at the new bound.
    store.set_queue_limits(QUEUE, QueueLimits(max_running=2))
    _fill(5, tmp_path, 0.0, phase="3")
    claimed = store.claim_jobs(ClaimOptions(queues=[QUEUE], limit=5))
    assert len(claimed) == 2
