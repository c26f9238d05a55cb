"""``runjobs`` in-process: what its verbosity does to the loggers."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from django.core.management import call_command

from dispatch_jobs.compat import TASKS_LOGGER_NAME
from dispatch_jobs.models import Job, JobState
from tests.jobs import tasks
from tests.worker.support import enqueue

pytestmark = pytest.mark.django_db(transaction=True)

LOGGERS = ("dispatch_jobs", TASKS_LOGGER_NAME)


@pytest.fixture
def restore_levels() -> Iterator[None]:
    levels = {name: logging.getLogger(name).level for name in LOGGERS}
    yield
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)


def test_quiet_runjobs_silences_the_per_job_lines_and_still_runs_the_jobs(restore_levels, caplog):
    job = enqueue(tasks.add, 2, 3)
    caplog.set_level(logging.DEBUG)  # everything that is emitted is captured
    call_command("runjobs", "--burst", "--no-maintenance", verbosity=0)
    assert Job.objects.get(pk=job.pk).state == JobState.COMPLETED
    for name in LOGGERS:
        assert not logging.getLogger(name).isEnabledFor(logging.INFO)
    ours = [r for r in caplog.records if r.name.startswith(LOGGERS)]
    assert [r for r in ours if r.levelno < logging.WARNING] == []


def test_default_verbosity_logs_one_line_per_job(restore_levels, caplog):
    job = enqueue(tasks.add, 2, 3)
    caplog.set_level(logging.INFO)
    call_command("runjobs", "--burst", "--no-maintenance", verbosity=1)
    lines = [r.getMessage() for r in caplog.records if r.name == "dispatch_jobs.worker"]
    assert any(line.startswith(f"Job {job.pk} ") and "completed" in line for line in lines)
