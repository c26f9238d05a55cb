from datetime import timedelta

import pytest

from dispatch_jobs import store
from dispatch_jobs.store import ClaimOptions

pytestmark = pytest.mark.django_db(transaction=True)


def test_enqueue_claim_complete(make_job):
    jobs = store.enqueue_jobs([make_job(priority=p) for p in (0, 5, 1)])
    assert all(j.id for j in jobs)
    claimed = store.claim_jobs(
        ClaimOptions(queues=["default"], limit=2, worker_id="w1", lease_ttl=timedelta(seconds=30),
                     budget={"memory": 0}, custom_keys=["fpga"], prefer_hashes=["x", ""])
    )
    assert [j.priority for j in claimed] == [5, 1]
    assert all(j.lease_epoch == 1 and j.worker_id == "w1" for j in claimed)
    job = claimed[0]
    job.state = "completed"
    store.update_leased_job(job, "w1", 1)
    store.renew_lease(claimed[1].id, "w1", 1, timedelta(seconds=5))
    assert store.renew_leases("w1", [(claimed[1].id, 1, timedelta(seconds=5)), (job.id, 1, timedelta(seconds=5))]) == {job.id}
    page = store.list_jobs(store.ListOptions(limit=2, name_prefix="tests.JOBS"))
    assert page.jobs == []
    page = store.list_jobs(store.ListOptions(limit=2, name_prefix="tests.jobs"))
    assert len(page.jobs) == 2 and page.next_cursor
    page2 = store.list_jobs(store.ListOptions(limit=2, cursor=page.next_cursor))
    assert len(page2.jobs) == 1 and not page2.next_cursor
    assert store.reclaim_expired_leases(10) == []
    assert store.acquire_leadership("m", "a", timedelta(seconds=5))
    assert not store.acquire_leadership("m", "b", timedelta(seconds=5))
    assert store.count_jobs(state="running") == 1
    assert store.reap_stale_jobs(timedelta(0))
