"""The standard django.tasks API end to end: enqueue, run through the real worker
pipeline (``testing.run_jobs``), read results."""

from __future__ import annotations

from datetime import timedelta

import pytest
from asgiref.sync import async_to_sync
from django.utils import timezone

from dispatch_jobs import testing
from dispatch_jobs.backend import DispatchBackend
from dispatch_jobs.compat import TaskResultStatus, task_finished, task_started
from dispatch_jobs.models import Job
from dispatch_jobs.scope import scope
from tests.jobs import tasks

pytestmark = pytest.mark.django_db


def test_success_with_return_value():
    result = tasks.add.enqueue(2, 3)
    assert testing.run_jobs() == 1
    assert result.status == TaskResultStatus.READY  # a snapshot until refreshed
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.return_value == 5
    assert result.is_finished and result.errors == []
    assert len(result.worker_ids) == 1 and result.attempts == 1
    assert result.enqueued_at <= result.started_at <= result.finished_at
    assert result.last_attempted_at == result.started_at


def test_failure_records_the_error():
    result = tasks.fail_for_good.enqueue("broken")
    testing.run_jobs()
    result = tasks.fail_for_good.get_result(result.id)
    assert result.status == TaskResultStatus.FAILED
    assert [e.exception_class for e in result.errors] == [ValueError]
    assert "broken" in result.errors[0].traceback
    with pytest.raises(ValueError, match="Task failed"):
        result.return_value  # noqa: B018


def test_a_retryable_error_leaves_the_job_ready_with_one_error():
    result = tasks.raise_value_error.enqueue("again")
    assert testing.run_jobs() == 1  # the retry is scheduled later: not ready now
    result.refresh()
    assert result.status == TaskResultStatus.READY
    assert len(result.errors) == 1 and len(result.worker_ids) == 1
    assert Job.objects.get(pk=result.id).state == "retrying"


def test_a_declared_permanent_exception_fails_at_once():
    result = tasks.lookup.enqueue("missing")
    testing.run_jobs()
    result.refresh()
    assert result.status == TaskResultStatus.FAILED
    assert [e.exception_class for e in result.errors] == [KeyError]


def test_signals_carry_the_backend_class():
    seen = []

    def started(sender, task_result, **kwargs):
        seen.append(("started", sender, task_result.status))

    def finished(sender, task_result, **kwargs):
        seen.append(("finished", sender, task_result.status))

    task_started.connect(started)
    task_finished.connect(finished)
    try:
        tasks.add.enqueue(1, 1)
        testing.run_jobs()
    finally:
        task_started.disconnect(started)
        task_finished.disconnect(finished)
    assert seen == [
        ("started", DispatchBackend, TaskResultStatus.RUNNING),
        ("finished", DispatchBackend, TaskResultStatus.SUCCESSFUL),
    ]


def test_async_task_through_the_async_twins():
    result = async_to_sync(tasks.async_add.aenqueue)(20, 22)
    testing.run_jobs()
    fetched = async_to_sync(tasks.async_add.aget_result)(result.id)
    assert fetched.status == TaskResultStatus.SUCCESSFUL and fetched.return_value == 42
    async_to_sync(result.arefresh)()
    assert result.return_value == 42


def test_run_after_is_honoured():
    later = tasks.add.using(run_after=timezone.now() + timedelta(hours=1)).enqueue(1, 2)
    due = tasks.add.using(run_after=timezone.now() - timedelta(seconds=1)).enqueue(3, 4)
    assert testing.run_jobs() == 1
    later.refresh()
    due.refresh()
    assert later.status == TaskResultStatus.READY
    assert due.status == TaskResultStatus.SUCCESSFUL


def test_higher_priority_runs_first():
    low = tasks.add.using(priority=-5).enqueue(0, 1)
    high = tasks.add.using(priority=50).enqueue(0, 2)
    middle = tasks.add.enqueue(0, 3)
    order = []
    while testing.run_jobs(max_jobs=1):
        for result in (low, high, middle):
            result.refresh()
        order.append([r.id for r in (low, high, middle) if r.is_finished])
    assert order == [[high.id], [high.id, middle.id], [low.id, high.id, middle.id]]


def test_queues_are_run_separately():
    email = tasks.send_email.enqueue("ada@example.com")
    other = tasks.add.enqueue(1, 2)
    assert Job.objects.get(pk=email.id).queue == "emails"
    assert testing.run_jobs(queues=["emails"]) == 1
    email.refresh()
    other.refresh()
    assert email.return_value == "sent to ada@example.com"
    assert other.status == TaskResultStatus.READY


def test_takes_context_receives_the_attempt():
    result = tasks.attempt_number.enqueue("x")
    testing.run_jobs()
    result.refresh()
    assert result.return_value == 1


def test_aliased_task_runs_under_its_alias():
    result = tasks.greet.enqueue("Ada", punctuation="?")
    testing.run_jobs()
    result.refresh()
    assert result.return_value == "Hello, Ada?"


def test_scope_is_restored_for_the_handler():
    with scope(app_id="app-1", org_id="org-7"):
        result = tasks.report_scope.enqueue()
    testing.run_jobs()
    result.refresh()
    assert result.return_value == {"app": "app-1", "org": "org-7"}


def test_a_renamed_task_fails_clearly():
    from dispatch_jobs import store

    job = store.enqueue_job(Job(name="tests.jobs.tasks.renamed_away", payload={}))
    assert testing.run_jobs() == 1
    job.refresh_from_db()
    assert job.state == "failed"
    assert "renamed or removed" in job.last_error


def test_call_acall_and_get_backend_are_djangos():
    assert tasks.add.call(1, 2) == 3
    assert async_to_sync(tasks.add.acall)(1, 2) == 3
    assert tasks.async_add.call(1, 2) == 3
    assert isinstance(tasks.add.get_backend(), DispatchBackend)
    assert Job.objects.count() == 0  # calling directly never enqueues
