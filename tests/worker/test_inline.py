"""``dispatch_jobs.worker.drain``: the real executor and completer, in this thread."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from django.test import override_settings

from dispatch_jobs.compat import (
    TASKS_LOGGER_NAME,
    log_task_finished,
    log_task_started,
    task_backends,
    task_finished,
    task_started,
)
from dispatch_jobs.models import Job, JobState, Usage
from dispatch_jobs.scope import scope
from dispatch_jobs.worker import drain
from dispatch_jobs.worker.results import has_effect
from tests.jobs import tasks
from tests.worker.support import enqueue, reload

pytestmark = pytest.mark.django_db


def test_success_stores_return_value_attempt_and_usage():
    job = enqueue(tasks.add, 2, 3)
    assert drain() == 1
    job = reload(job)
    assert job.state == JobState.COMPLETED
    assert job.return_value == 5
    assert job.completed_at is not None
    assert job.retry_count == 0
    [attempt] = job.attempts
    assert attempt["status"] == "completed"
    assert attempt["attempt"] == 1
    assert attempt["worker_id"].startswith("inline-")
    assert attempt["exception_class"] == ""
    assert attempt["started_at"] <= attempt["finished_at"]
    [usage] = Usage.objects.filter(job_id=job.pk)
    assert usage.status == JobState.COMPLETED
    assert usage.executor == "in-process"
    assert usage.attempt == 1
    assert usage.wall_time >= timedelta(0)
    assert usage.cpu_time is not None


def test_error_goes_to_retrying_with_backoff_and_keeps_the_traceback():
    job = enqueue(tasks.raise_value_error, "bad input", max_retries=2)
    assert drain(max_jobs=1) == 1
    job = reload(job)
    assert job.state == JobState.RETRYING
    assert job.retry_count == 1
    assert job.evict_count == 0
    assert job.last_error == "ValueError: bad input"
    [attempt] = job.attempts
    assert attempt["status"] == "retrying"
    assert attempt["exception_class"] == "builtins.ValueError"
    assert "raise ValueError(message)" in attempt["traceback"]
    # Full jitter over base 1 s for the first retry: run_at within [now, now + 1 s].
    assert job.run_at <= job.updated_at + timedelta(seconds=1, milliseconds=50)
    assert Usage.objects.get(job_id=job.pk).status == JobState.RETRYING


@override_settings(
    DISPATCH_JOBS={
        "RETRY_BACKOFF_BASE": timedelta(milliseconds=1),
        "RETRY_BACKOFF_CAP": timedelta(milliseconds=1),
    }
)
def test_retries_exhausted_goes_to_failed_with_every_attempt_recorded():
    job = enqueue(tasks.raise_value_error, max_retries=2)
    ran = 0
    for _ in range(200):
        ran += drain()
        if reload(job).state == JobState.FAILED:
            break
    job = reload(job)
    assert job.state == JobState.FAILED
    assert ran == 3
    assert job.retry_count == 2
    assert [a["status"] for a in job.attempts] == ["retrying", "retrying", "failed"]
    assert [a["attempt"] for a in job.attempts] == [1, 2, 3]
    assert Usage.objects.filter(job_id=job.pk).count() == 3


def test_permanent_error_fails_at_once():
    job = enqueue(tasks.raise_permanent, "customer deleted", max_retries=5)
    drain()
    job = reload(job)
    assert job.state == JobState.FAILED
    assert job.retry_count == 0
    assert job.attempts[0]["exception_class"] == "dispatch_jobs.exceptions.Permanent"
    assert "customer deleted" in job.last_error


def test_unknown_task_fails_permanently_and_the_drain_carries_on():
    lost = enqueue(tasks.add, 1, 1)
    Job.objects.filter(pk=lost.pk).update(name="tests.jobs.tasks.no_such_task")
    ok = enqueue(tasks.add, 1, 2)
    assert drain() == 2
    lost = reload(lost)
    assert lost.state == JobState.FAILED
    assert "cannot be imported" in lost.last_error
    assert reload(ok).return_value == 3


def test_undecodable_payload_fails_permanently():
    job = enqueue(tasks.add, 1, 2)
    Job.objects.filter(pk=job.pk).update(payload={"args": "not-a-list", "kwargs": {}})
    drain()
    job = reload(job)
    assert job.state == JobState.FAILED
    assert job.attempts[0]["exception_class"].endswith("InvalidPayload")


def test_non_json_return_value_fails_clearly():
    job = enqueue(tasks.return_object, max_retries=3)
    drain()
    job = reload(job)
    assert job.state == JobState.FAILED
    assert "cannot be stored as JSON" in job.last_error
    assert job.return_value is None


def test_scope_is_restored_around_the_handler():
    with scope("app-1", "org-9"):
        job = enqueue(tasks.report_scope, scope_app_id="app-1", scope_org_id="org-9")
    drain()
    assert reload(job).return_value == {"app": "app-1", "org": "org-9"}
    usage = Usage.objects.get(job_id=job.pk)
    assert (usage.scope_app_id, usage.scope_org_id) == ("app-1", "org-9")


def test_timeout_is_observed_and_recorded_as_a_retryable_failure():
    job = enqueue(tasks.nap, 30, timeout=timedelta(milliseconds=200), max_retries=1)
    drain(max_jobs=1)
    job = reload(job)
    assert job.state == JobState.RETRYING
    assert job.attempts[0]["status"] == "timeout"
    assert job.attempts[0]["exception_class"].endswith("JobTimedOut")


def test_drain_respects_queues_and_max_jobs():
    jobs = [enqueue(tasks.add, i, i) for i in range(3)]
    other = enqueue(tasks.add, 0, 0, queue="other")
    assert drain(queues=["default"], max_jobs=2) == 2
    assert drain(queues=["default"]) == 1
    assert all(reload(j).state == JobState.COMPLETED for j in jobs)
    assert reload(other).state == JobState.PENDING
    assert drain() == 1


def test_signals_are_sent_with_the_backend_class_and_failure_inside_except():
    seen: list[tuple[str, str, bool]] = []
    senders: list[type] = []

    def on_started(sender, task_result, **kwargs):
        seen.append(("started", task_result.status, False))

    def on_finished(sender, task_result, **kwargs):
        import sys

        seen.append(("finished", task_result.status, sys.exc_info()[0] is not None))
        senders.append(sender)

    task_started.connect(on_started)
    task_finished.connect(on_finished)
    try:
        enqueue(tasks.add, 1, 1)
        drain()
        enqueue(tasks.raise_permanent)
        drain()
    finally:
        task_started.disconnect(on_started)
        task_finished.disconnect(on_finished)
    assert seen == [
        ("started", "RUNNING", False),
        ("finished", "SUCCESSFUL", False),
        ("started", "RUNNING", False),
        ("finished", "FAILED", True),
    ]
    assert senders == [type(task_backends["default"])] * 2


def test_a_failing_task_finished_receiver_does_not_lose_the_outcome():
    def broken(sender, task_result, **kwargs):
        raise RuntimeError("receiver bug")

    task_finished.connect(broken)
    try:
        job = enqueue(tasks.add, 20, 22)
        drain()
    finally:
        task_finished.disconnect(broken)
    job = reload(job)
    assert (job.state, job.return_value) == (JobState.COMPLETED, 42)


@pytest.fixture
def tasks_logger():
    """Django's ``django.tasks`` logger (the backport's on 5.2), its level restored afterwards."""
    logger = logging.getLogger(TASKS_LOGGER_NAME)
    level = logger.level
    yield logger
    logger.setLevel(level)


def test_django_logs_each_task_when_its_logger_listens(tasks_logger, caplog):
    tasks_logger.setLevel(logging.INFO)
    with caplog.at_level(logging.INFO, logger=TASKS_LOGGER_NAME):
        job = enqueue(tasks.add, 1, 2)
        drain()
    lines = [r.getMessage() for r in caplog.records if r.name == TASKS_LOGGER_NAME]
    assert f"Task id={job.pk} path=tests.jobs.tasks.add state=RUNNING" in lines
    assert f"Task id={job.pk} path=tests.jobs.tasks.add state=SUCCESSFUL" in lines


def test_a_send_only_djangos_quiet_logger_would_hear_is_skipped(tasks_logger):
    tasks_logger.setLevel(logging.WARNING)
    # Django's own logging receivers alone, logger quiet: nothing could observe it.
    assert not has_effect(task_started, log_task_started)
    assert not has_effect(task_finished, log_task_finished)
    tasks_logger.setLevel(logging.INFO)
    assert has_effect(task_started, log_task_started)
    tasks_logger.setLevel(logging.WARNING)

    def listener(sender, task_result, **kwargs):
        pass

    task_finished.connect(listener)
    try:
        assert has_effect(task_finished, log_task_finished)
    finally:
        task_finished.disconnect(listener)
    assert not has_effect(task_finished, log_task_finished)


def test_current_job_gives_a_handler_its_context_on_demand():
    job = enqueue(tasks.report_context)
    drain()
    job = reload(job)
    assert job.state == JobState.COMPLETED
    assert job.return_value == {"job_id": job.pk, "id": str(job.pk), "status": "RUNNING"}
