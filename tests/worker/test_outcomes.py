"""Outcomes and backoff: retry timing, per-task bounds, declared permanent errors."""

from __future__ import annotations

import random
from datetime import timedelta
from types import SimpleNamespace

import pytest

from dispatch_jobs.models import JobState
from dispatch_jobs.worker import drain
from dispatch_jobs.worker.backoff import retry_delay
from tests.jobs import tasks
from tests.worker.support import enqueue, reload


@pytest.mark.parametrize("retry", [1, 2, 3, 7, 30, 500])
def test_full_jitter_stays_within_the_capped_exponential(retry):
    ceiling = min(60.0, 1.0 * 2 ** (retry - 1))
    rng = random.Random(retry)
    delays = [retry_delay(retry, rng=rng).total_seconds() for _ in range(200)]
    assert all(0 <= d <= ceiling for d in delays)
    # Jitter spreads the herd: the draws are not all the same.
    assert len(set(delays)) > 100


def test_a_task_overrides_base_and_cap():
    task = SimpleNamespace(
        retry_backoff_base=timedelta(milliseconds=10), retry_backoff_cap=timedelta(seconds=0.05)
    )
    delays = [retry_delay(10, task).total_seconds() for _ in range(100)]
    assert max(delays) <= 0.05


@pytest.mark.django_db
def test_an_exception_class_declared_permanent_fails_at_once():
    job = enqueue(tasks.lookup, "missing", max_retries=5)
    drain()
    job = reload(job)
    assert job.state == JobState.FAILED and job.retry_count == 0
    assert job.attempts[0]["exception_class"] == "builtins.KeyError"


@pytest.mark.django_db
def test_per_task_backoff_sets_run_at_from_the_database_clock(tmp_path):
    job = enqueue(tasks.flaky, str(tmp_path), "x", 1)
    drain(max_jobs=1)
    job = reload(job)
    assert job.state == JobState.RETRYING
    # run_at = database-now + a delay in [0, 200 ms] (the first retry's ceiling).
    assert timedelta(0) <= job.run_at - job.updated_at <= timedelta(milliseconds=210)
