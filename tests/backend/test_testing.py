"""dispatch_jobs.testing: what users call in their own tests."""

from __future__ import annotations

import pytest

from dispatch_jobs import testing
from dispatch_jobs.models import Job
from tests.jobs import tasks

pytestmark = pytest.mark.django_db


def test_assert_enqueued_matches_args_and_kwargs():
    tasks.greet.enqueue("Ada", punctuation="!")
    tasks.greet.enqueue("Bob")
    [job] = testing.assert_enqueued(tasks.greet, args=["Ada"], kwargs={"punctuation": "!"})
    assert job.args == ["Ada"]
    testing.assert_enqueued(tasks.greet, args=("Bob",))  # a tuple compares as stored
    testing.assert_enqueued(tasks.greet, count=2)
    testing.assert_enqueued("greet-v1", count=2)  # by the stored name


def test_assert_enqueued_fails_with_what_was_there():
    tasks.add.enqueue(1, 2)
    with pytest.raises(AssertionError) as excinfo:
        testing.assert_enqueued(tasks.add, args=[2, 1])
    message = str(excinfo.value)
    assert "'tests.jobs.tasks.add' with args=[2, 1], found 0" in message
    assert "args=[1, 2]" in message
    with pytest.raises(AssertionError, match="Expected 2 job"):
        testing.assert_enqueued(tasks.add, count=2)


def test_assert_enqueued_by_queue():
    tasks.add.using(queue_name="low").enqueue(1, 2)
    testing.assert_enqueued(tasks.add, queue="low")
    with pytest.raises(AssertionError):
        testing.assert_enqueued(tasks.add, queue="high")


def test_assert_not_enqueued():
    testing.assert_not_enqueued(tasks.add)
    tasks.add.enqueue(1, 2)
    testing.assert_not_enqueued(tasks.add, args=[5, 5])
    with pytest.raises(AssertionError, match="Expected no job of 'tests.jobs.tasks.add'"):
        testing.assert_not_enqueued(tasks.add)


def test_run_jobs_then_nothing_is_enqueued():
    tasks.add.enqueue(1, 2)
    tasks.send_email.enqueue("a@example.com")
    assert len(testing.enqueued_jobs()) == 2
    assert testing.run_jobs(queues=["default"]) == 1
    assert [j.queue for j in testing.enqueued_jobs()] == ["emails"]
    assert testing.run_jobs() == 1
    assert testing.enqueued_jobs() == []
    assert len(testing.enqueued_jobs(states=["completed"])) == 2


def test_run_jobs_max_jobs():
    for i in range(3):
        tasks.add.enqueue(i, i)
    assert testing.run_jobs(max_jobs=2) == 2
    assert len(testing.enqueued_jobs(tasks.add)) == 1


def test_clear_jobs():
    tasks.add.enqueue(1, 2)
    tasks.send_email.enqueue("a@example.com")
    tasks.add.using(queue_name="low").enqueue(3, 4)
    assert testing.clear_jobs(queues=["emails", "low"]) == 2
    assert list(Job.objects.values_list("queue", flat=True)) == ["default"]
    assert testing.clear_jobs() == 1
    assert Job.objects.count() == 0
