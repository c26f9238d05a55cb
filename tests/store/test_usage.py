"""Usage records: record, list (most recent first, filters, paging), purge."""

from __future__ import annotations

from datetime import timedelta

import pytest

from dispatch_jobs import store
from dispatch_jobs.models import Usage
from tests.factories import UsageFactory
from tests.store.support import db_now, ids

pytestmark = pytest.mark.django_db

HOUR = timedelta(hours=1)


def test_record_usage_stores_every_field() -> None:
    usage = store.record_usage(
        Usage(
            job_id=7,
            name="n",
            queue="q",
            attempt=2,
            status="failed",
            input_bytes=10,
            resources={"memory": 5},
            wall_time=timedelta(seconds=3),
            cpu_time=timedelta(seconds=2),
            peak_rss=99,
            disk_written=11,
            executor="subprocess",
            scope_app_id="app",
            scope_org_id="org",
            worker_id="w1",
        )
    )
    row = Usage.objects.get(pk=usage.pk)
    assert (row.job_id, row.attempt, row.status, row.peak_rss) == (7, 2, "failed", 99)
    assert row.cpu_time == timedelta(seconds=2) and row.recorded_at is not None


def test_record_usages_is_one_insert(django_assert_num_queries) -> None:  # noqa: ANN001
    with django_assert_num_queries(1):
        store.record_usages(UsageFactory.build_batch(5))
    assert Usage.objects.count() == 5


def test_list_usage_is_most_recent_first() -> None:
    now = db_now()
    old = UsageFactory.create(recorded_at=now - 2 * HOUR)
    new = UsageFactory.create(recorded_at=now)
    mid = UsageFactory.create(recorded_at=now - HOUR)
    assert ids(store.list_usage()) == [new.pk, mid.pk, old.pk]


def test_list_usage_filters_by_name_and_since() -> None:
    now = db_now()
    UsageFactory.create(name="a", recorded_at=now - 2 * HOUR)
    recent_a = UsageFactory.create(name="a", recorded_at=now - HOUR)
    UsageFactory.create(name="b", recorded_at=now)
    assert ids(store.list_usage(name="a", since=now - HOUR)) == [recent_a.pk]
    assert len(store.list_usage(name="a")) == 2
    assert len(store.list_usage(since=now - HOUR)) == 2


def test_list_usage_limit_and_offset() -> None:
    now = db_now()
    rows = [UsageFactory.create(recorded_at=now - i * HOUR) for i in range(5)]
    assert ids(store.list_usage(limit=2)) == ids(rows[:2])
    assert ids(store.list_usage(limit=2, offset=2)) == ids(rows[2:4])
    assert ids(store.list_usage(offset=4)) == ids(rows[4:])


def test_purge_usage_removes_older_records_up_to_limit() -> None:
    now = db_now()
    old = [UsageFactory.create(recorded_at=now - (10 - i) * HOUR) for i in range(3)]
    kept = UsageFactory.create(recorded_at=now)
    assert store.purge_usage(now - HOUR, limit=2) == 2
    assert set(Usage.objects.values_list("pk", flat=True)) == {old[2].pk, kept.pk}
    assert store.purge_usage(now - HOUR, limit=10) == 1
    assert store.purge_usage(now - HOUR, limit=10) == 0
    assert list(Usage.objects.values_list("pk", flat=True)) == [kept.pk]


def test_purge_usage_with_non_positive_limit_removes_nothing() -> None:
    UsageFactory.create(recorded_at=db_now() - HOUR)
    assert store.purge_usage(db_now(), limit=0) == 0
    assert Usage.objects.count() == 1
