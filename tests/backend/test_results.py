"""Job rows as TaskResults: status, attempts, errors, return value, timestamps."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from asgiref.sync import async_to_sync

from dispatch_jobs import store
from dispatch_jobs.compat import (
    TaskResultDoesNotExist,
    TaskResultMismatch,
    TaskResultStatus,
    default_task_backend,
)
from dispatch_jobs.models import Job
from tests.jobs import tasks

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 1, 1, 10, 0, tzinfo=UTC)


def _at(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


def _attempt(number: int, status: str, **extra: object) -> dict[str, object]:
    return {
        "attempt": number,
        "worker_id": f"w{number}",
        "status": status,
        "exception_class": "",
        "message": "",
        "traceback": "",
        "started_at": _at(number * 10).isoformat(),
        "finished_at": _at(number * 10 + 1).isoformat(),
        **extra,
    }


def _set(result_id: str, **fields: object) -> Job:
    """Move a job to a state a worker would leave it in (through the store)."""
    job = store.get_job(int(result_id))
    for name, value in fields.items():
        setattr(job, name, value)
    store.update_job(job)
    return job


@pytest.mark.parametrize(
    ("state", "status"),
    [
        ("pending", TaskResultStatus.READY),
        ("retrying", TaskResultStatus.READY),
        ("running", TaskResultStatus.RUNNING),
        ("completed", TaskResultStatus.SUCCESSFUL),
        ("failed", TaskResultStatus.FAILED),
        ("cancelled", TaskResultStatus.FAILED),
    ],
)
def test_status_mapping(state, status):
    result = tasks.add.enqueue(1, 2)
    _set(result.id, state=state)
    assert tasks.add.get_result(result.id).status == status


def test_a_job_retried_twice_and_running_again():
    result = tasks.add.enqueue(1, 2)
    _set(
        result.id,
        state="running",
        worker_id="w3",
        started_at=_at(30),
        attempts=[
            _attempt(1, "retrying", exception_class="builtins.ValueError", traceback="TB1"),
            _attempt(2, "timeout", message="ran past its timeout"),
        ],
    )
    result.refresh()
    assert result.status == TaskResultStatus.RUNNING
    assert result.worker_ids == ["w1", "w2", "w3"]  # one per attempt + the holder
    assert result.attempts == 3
    assert [e.exception_class_path for e in result.errors] == [
        "builtins.ValueError",
        "builtins.TimeoutError",
    ]
    assert result.errors[0].exception_class is ValueError
    assert result.errors[0].traceback == "TB1"
    assert result.errors[1].traceback == "ran past its timeout"
    assert result.started_at == _at(10)  # the first attempt
    assert result.last_attempted_at == _at(30)  # the current one
    assert result.finished_at is None
    with pytest.raises(ValueError, match="not finished yet"):
        result.return_value  # noqa: B018


def test_a_completed_job():
    result = tasks.add.enqueue(1, 2)
    _set(
        result.id,
        state="completed",
        return_value={"sum": 3},
        completed_at=_at(21),
        attempts=[
            _attempt(1, "retrying", exception_class="builtins.KeyError", traceback="TB"),
            _attempt(2, "completed"),
        ],
    )
    result = tasks.add.get_result(result.id)
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.is_finished
    assert result.return_value == {"sum": 3}
    assert result.worker_ids == ["w1", "w2"]
    assert len(result.errors) == 1  # the completed attempt is not an error
    assert result.finished_at == _at(21)
    assert result.last_attempted_at == _at(20)
    job = Job.objects.get(pk=result.id)
    assert result.enqueued_at == job.created_at


def test_a_failed_job():
    result = tasks.add.enqueue(1, 2)
    _set(
        result.id,
        state="failed",
        completed_at=_at(11),
        attempts=[_attempt(1, "failed", exception_class="dispatch_jobs.exceptions.Permanent")],
    )
    result.refresh()
    assert result.status == TaskResultStatus.FAILED
    assert [e.exception_class_path for e in result.errors] == ["dispatch_jobs.exceptions.Permanent"]
    with pytest.raises(ValueError, match="Task failed"):
        result.return_value  # noqa: B018


def test_the_result_shows_the_rows_queue_and_priority():
    result = tasks.add.using(queue_name="high", priority=9).enqueue(1, 2)
    fetched = default_task_backend.get_result(result.id)
    assert (fetched.task.queue_name, fetched.task.priority) == ("high", 9)
    assert fetched.task.func is tasks.add.func


@pytest.mark.parametrize("bad_id", ["abc", "", "-1", "1.5", "0", " 1", "١", None, 2**70])
def test_malformed_ids_do_not_exist(bad_id):
    with pytest.raises(TaskResultDoesNotExist):
        default_task_backend.get_result(bad_id)


def test_unknown_id_does_not_exist():
    result = tasks.add.enqueue(1, 2)
    with pytest.raises(TaskResultDoesNotExist, match="does not exist"):
        default_task_backend.get_result(str(int(result.id) + 1000))


def test_result_of_another_task_is_a_mismatch():
    result = tasks.greet.enqueue("Ada")
    with pytest.raises(TaskResultMismatch):
        tasks.add.get_result(result.id)
    assert tasks.greet.get_result(result.id).args == ["Ada"]


def test_result_of_a_removed_task():
    job = store.enqueue_job(Job(name="tests.jobs.tasks.was_removed", payload={}))
    with pytest.raises(TaskResultDoesNotExist, match="its task cannot be loaded"):
        default_task_backend.get_result(str(job.pk))


def test_aget_result_and_arefresh():
    result = tasks.add.enqueue(1, 2)
    fetched = async_to_sync(tasks.add.aget_result)(result.id)
    assert fetched.id == result.id
    _set(result.id, state="completed", return_value=3)
    async_to_sync(fetched.arefresh)()
    assert fetched.status == TaskResultStatus.SUCCESSFUL and fetched.return_value == 3
