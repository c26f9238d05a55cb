"""What a real ``runjobs --burst`` prints at ``-v 0``, ``-v 1`` and ``-v 2``: one
format, one line per job at 1, tracebacks only at 2 (once per failed attempt)."""

from __future__ import annotations

import re

import pytest

from dispatch_jobs.compat import TASKS_LOGGER_NAME
from dispatch_jobs.models import Job, JobState
from tests.jobs import tasks
from tests.worker.processes import FAST
from tests.worker.support import enqueue

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

# The one format: "2026-12-01 13:19:24,123 INFO dispatch_jobs.worker: ..."
LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} [A-Z]+ [\w.]+: ")
SUCCESSES, FAILURES, RETRIES = 4, 2, 2
# Lines a burst prints besides its jobs' lines (and, on PostgreSQL, "Listening
# for enqueue notifications").
FRAME = (" starting: ", "Burst: nothing left that is ready.", " stopped: ")


def burst(workers, verbosity: str) -> tuple[list[Job], str]:
    jobs = [enqueue(tasks.add, i, i) for i in range(SUCCESSES)]
    jobs += [enqueue(tasks.raise_value_error, "bad\ninput", max_retries=0) for _ in range(FAILURES)]
    jobs += [enqueue(tasks.fail_then_wait, "later", max_retries=3) for _ in range(RETRIES)]
    # --skip-checks: the system checks' own output is not the worker's (on MariaDB,
    # Django warns that the partial indexes' conditions are ignored).
    proc = workers("--burst", "--no-maintenance", "--skip-checks", *FAST, "-v", verbosity)
    assert proc.wait() == 0, proc.log()
    states = [Job.objects.get(pk=job.pk).state for job in jobs]
    assert states.count(JobState.COMPLETED) == SUCCESSES
    assert states.count(JobState.FAILED) == FAILURES
    assert states.count(JobState.RETRYING) == RETRIES
    return jobs, proc.log()


def lines_of(job: Job, log: str) -> list[str]:
    return [line for line in log.splitlines() if f" Job {job.pk} " in line]


def test_v0_prints_nothing_per_job(workers):
    jobs, log = burst(workers, "0")
    assert all(lines_of(job, log) == [] for job in jobs), log
    assert "Traceback" not in log and "Task id=" not in log
    assert [line for line in log.splitlines() if line.strip()] == [], log


def test_v1_prints_one_line_per_job_in_one_format(workers):
    jobs, log = burst(workers, "1")
    lines = log.splitlines()
    assert all(LINE.match(line) for line in lines), log
    frame = [line for line in lines if " Job " not in line]
    assert len(lines) == len(jobs) + len(frame), log
    assert [kind for kind in FRAME if any(kind in line for line in frame)] == list(FRAME), log
    assert len(frame) == len(FRAME) + ("Listening for enqueue" in log), log
    for job in jobs:
        (line,) = lines_of(job, log)
        assert job.name in line
    for job in jobs[:SUCCESSES]:
        assert re.search(r"completed in \d+(\.\d+)? (ms|s)\.$", lines_of(job, log)[0])
    for job in jobs[SUCCESSES : SUCCESSES + FAILURES]:
        assert lines_of(job, log)[0].endswith("failed for good: ValueError: bad input")
    for job in jobs[SUCCESSES + FAILURES :]:
        assert "failed (ValueError: later), retry 1/3 in" in lines_of(job, log)[0]
    assert "Traceback" not in log and "Task id=" not in log
    assert "serving queues default, emails, high, low" in lines[0]


def test_v2_adds_one_traceback_per_failed_attempt_and_djangos_lines(workers):
    jobs, log = burst(workers, "2")
    assert log.count("Traceback (most recent call last)") == FAILURES + RETRIES, log
    for job in jobs:
        assert len(lines_of(job, log)) == 1, log
        # Django's task_started and task_finished, in the same format.
        django_lines = [line for line in log.splitlines() if f"Task id={job.pk} " in line]
        assert len(django_lines) == 2, log
        logger = f" {TASKS_LOGGER_NAME}: "  # "django.tasks", or the backport's on 5.2
        assert all(LINE.match(line) and logger in line for line in django_lines)
    assert "Claimed " in log
