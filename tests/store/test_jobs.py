"""Plain job operations: get, unfenced update, delete, list by state, heartbeat,
reap stale, count."""

from __future__ import annotations

from datetime import timedelta

import pytest

from dispatch_jobs import store
from dispatch_jobs.exceptions import JobNotFound, LeaseLost
from dispatch_jobs.models import Job, JobState
from tests.factories import JobFactory, running
from tests.store.support import db_now, ids, moment, snapshot

pytestmark = pytest.mark.django_db

MINUTE = timedelta(minutes=1)


def test_get_job_returns_the_row() -> None:
    job = JobFactory.create(payload={"args": [1], "kwargs": {"a": 2}})
    got = store.get_job(job.pk)
    assert got.pk == job.pk and got.payload == {"args": [1], "kwargs": {"a": 2}}


def test_get_missing_job_is_job_not_found() -> None:
    with pytest.raises(JobNotFound, match="Job 987654 does not exist"):
        store.get_job(987654)


def test_update_job_writes_the_whole_row_without_a_fence() -> None:
    job = JobFactory.create(**running("w1", 3))
    job.state = JobState.COMPLETED
    job.lease_epoch = 9  # unfenced: even lease columns are the caller's to write
    job.return_value = [1, 2]
    store.update_job(job)
    row = Job.objects.get(pk=job.pk)
    assert (row.state, row.lease_epoch, row.return_value) == (JobState.COMPLETED, 9, [1, 2])


def test_update_job_refreshes_updated_at_from_the_database() -> None:
    job = JobFactory.create(updated_at=db_now(-timedelta(days=1)))
    store.update_job(job)
    assert moment(job.pk, "updated_at") > db_now(-MINUTE)


def test_update_missing_job_is_job_not_found() -> None:
    job = JobFactory.create()
    Job.objects.filter(pk=job.pk).delete()
    with pytest.raises(JobNotFound):
        store.update_job(job)
    assert not Job.objects.filter(pk=job.pk).exists()


def test_delete_job_removes_the_row() -> None:
    job = JobFactory.create()
    store.delete_job(job.pk)
    assert not Job.objects.filter(pk=job.pk).exists()


def test_delete_missing_job_is_job_not_found() -> None:
    with pytest.raises(JobNotFound):
        store.delete_job(987654)


def test_list_jobs_by_state_filters_and_pages() -> None:
    pending = [JobFactory.create() for _ in range(4)]
    JobFactory.create(state=JobState.COMPLETED)
    JobFactory.create(queue="other")
    assert ids(store.list_jobs_by_state(JobState.PENDING, queue="default")) == ids(pending)
    assert ids(store.list_jobs_by_state(JobState.PENDING, queue="default", limit=2)) == ids(
        pending[:2]
    )
    assert ids(
        store.list_jobs_by_state(JobState.PENDING, queue="default", limit=2, offset=2)
    ) == ids(pending[2:])
    assert ids(store.list_jobs_by_state(JobState.PENDING, queue="default", offset=3)) == ids(
        pending[3:]
    )
    assert len(store.list_jobs_by_state(JobState.PENDING)) == 5


def test_heartbeat_job_touches_a_running_job_without_extending_it() -> None:
    job = JobFactory.create(
        **running(
            "w1", 3, heartbeat_at=db_now(-timedelta(hours=1)), lease_expires_at=db_now(MINUTE)
        )
    )
    expires = moment(job.pk, "lease_expires_at")
    store.heartbeat_job(job.pk, "w1", 3)
    assert moment(job.pk, "heartbeat_at") > db_now(-MINUTE)
    assert moment(job.pk, "lease_expires_at") == expires
    assert Job.objects.get(pk=job.pk).lease_epoch == 3


@pytest.mark.parametrize(
    ("worker_id", "epoch", "state"),
    [
        ("w2", 3, JobState.RUNNING),  # another worker
        ("w1", 2, JobState.RUNNING),  # a stale epoch: the lease moved on (reclaimed, re-granted)
        ("w1", 4, JobState.RUNNING),  # an epoch never granted
        ("w1", 3, JobState.PENDING),  # handed back
    ],
)
def test_heartbeat_outside_the_fence_is_lease_lost_and_writes_nothing(
    worker_id: str, epoch: int, state: str
) -> None:
    job = JobFactory.create(**running("w1", 3, state=state))
    before = snapshot(job.pk)
    with pytest.raises(LeaseLost):
        store.heartbeat_job(job.pk, worker_id, epoch)
    assert snapshot(job.pk) == before


def test_heartbeat_of_missing_job_is_job_not_found() -> None:
    with pytest.raises(JobNotFound):
        store.heartbeat_job(987654, "w1", 1)


def test_reap_stale_jobs_returns_silent_running_jobs_read_only() -> None:
    silent = JobFactory.create(**running(heartbeat_at=db_now(-timedelta(minutes=10))))
    JobFactory.create(**running(heartbeat_at=db_now(-timedelta(seconds=5))))
    JobFactory.create(state=JobState.PENDING, heartbeat_at=db_now(-timedelta(hours=1)))
    assert ids(store.reap_stale_jobs(timedelta(minutes=1))) == [silent.pk]
    assert Job.objects.get(pk=silent.pk).state == JobState.RUNNING


def test_reap_stale_uses_the_start_when_there_was_no_heartbeat() -> None:
    old = JobFactory.create(state=JobState.RUNNING, started_at=db_now(-timedelta(minutes=3)))
    JobFactory.create(state=JobState.RUNNING, started_at=db_now(-timedelta(seconds=3)))
    assert ids(store.reap_stale_jobs(timedelta(minutes=1))) == [old.pk]


def test_count_jobs_with_filters() -> None:
    JobFactory.create()
    JobFactory.create()
    JobFactory.create(queue="mail")
    JobFactory.create(queue="mail", state=JobState.FAILED)
    assert store.count_jobs() == 4
    assert store.count_jobs(queue="mail") == 2
    assert store.count_jobs(state=JobState.PENDING) == 3
    assert store.count_jobs(queue="mail", state=JobState.FAILED) == 1
    assert store.count_jobs(queue="none") == 0
