"""The fleet's gauges, read through the view with prometheus-client's parser:
what they count, their cap, their bounded queries, a failing database."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import OperationalError, connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from dispatch_jobs import store
from dispatch_jobs.metrics import fleet
from dispatch_jobs.models import Job, JobState
from dispatch_jobs.store import db
from tests.jobs import tasks
from tests.worker.support import enqueue

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.metrics.urls")]

URL = "/metrics/"


def scrape(client: Client) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = client.get(URL)
    assert response.status_code == 200
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.content.decode())
        for sample in family.samples
    }


def gauge(samples: dict, name: str, **labels: str) -> float | None:
    return samples.get((name, tuple(sorted(labels.items()))))


def test_depth_and_oldest_ready_age_per_queue(admin_client: Client):
    for i in range(3):
        enqueue(tasks.add, i, i)
    late = enqueue(tasks.add, 9, 9, priority=-5)
    Job.objects.filter(pk=late.pk).update(run_at=db.now_minus(timedelta(hours=1)))
    retrying = enqueue(tasks.add, 8, 8, queue="emails")
    Job.objects.filter(pk=retrying.pk).update(
        state=JobState.RETRYING, run_at=db.now_minus(timedelta(minutes=2))
    )
    enqueue(tasks.add, 1, 1, queue="emails", run_at=timezone.now() + timedelta(hours=1))  # not due
    running = enqueue(tasks.add, 2, 2, queue="emails")
    Job.objects.filter(pk=running.pk).update(state=JobState.RUNNING)
    store.pause_queue("low")

    samples = scrape(admin_client)
    assert gauge(samples, "dispatch_jobs_fleet_up") == 1.0
    assert gauge(samples, "dispatch_jobs_queue_ready_jobs", queue="default") == 4.0
    assert gauge(samples, "dispatch_jobs_queue_ready_jobs", queue="emails") == 1.0
    # Every known queue is reported, empty ones at 0 (TASKS' QUEUES in the test settings).
    assert gauge(samples, "dispatch_jobs_queue_ready_jobs", queue="high") == 0.0
    default_age = gauge(samples, "dispatch_jobs_queue_oldest_ready_age_seconds", queue="default")
    emails_age = gauge(samples, "dispatch_jobs_queue_oldest_ready_age_seconds", queue="emails")
    # Generous upper bounds: the box is loaded, but not by minutes.
    assert 3600 <= default_age < 3600 + 300
    assert 120 <= emails_age < 120 + 300
    assert gauge(samples, "dispatch_jobs_queue_oldest_ready_age_seconds", queue="high") == 0.0
    assert gauge(samples, "dispatch_jobs_queue_paused", queue="low") == 1.0
    assert gauge(samples, "dispatch_jobs_queue_paused", queue="default") == 0.0
    assert gauge(samples, "dispatch_jobs_queue_count_cap") == 10_000.0


def test_live_workers_by_state_and_the_queues_they_serve(admin_client: Client):
    store.register_worker("w1", hostname="h", pid=1, queues=["reports"], concurrency=2)
    store.register_worker("w2", hostname="h", pid=2, queues=["default"], concurrency=2)
    store.set_worker_state("w2", "draining")
    store.register_worker("old", hostname="h", pid=3, queues=["default"], concurrency=2)
    from dispatch_jobs.models import Worker

    Worker.objects.filter(id="old").update(last_seen_at=db.now_minus(timedelta(hours=1)))
    enqueue(tasks.add, 1, 1, queue="reports")
    samples = scrape(admin_client)
    assert gauge(samples, "dispatch_jobs_workers_live", state="active") == 1.0
    assert gauge(samples, "dispatch_jobs_workers_live", state="draining") == 1.0
    assert gauge(samples, "dispatch_jobs_queue_ready_jobs", queue="reports") == 1.0


def test_depth_stops_at_the_cap(admin_client: Client, settings):
    settings.DISPATCH_JOBS = {"METRICS_COUNT_CAP": 2}
    for i in range(3):
        enqueue(tasks.add, i, i)
    retrying = enqueue(tasks.add, 5, 5)
    Job.objects.filter(pk=retrying.pk).update(state=JobState.RETRYING)
    samples = scrape(admin_client)
    assert gauge(samples, "dispatch_jobs_queue_ready_jobs", queue="default") == 2.0
    assert gauge(samples, "dispatch_jobs_queue_count_cap") == 2.0


def test_every_read_of_the_jobs_table_is_limited(admin_client: Client, settings):
    settings.DISPATCH_JOBS = {"METRICS_COUNT_CAP": 500}
    enqueue(tasks.add, 1, 1)
    with CaptureQueriesContext(connection) as queries:
        scrape(admin_client)
    table = Job._meta.db_table
    reads = [q["sql"] for q in queries.captured_queries if f"FROM {_quoted(table)}" in q["sql"]]
    queues = len(fleet.read_fleet(500).queues)
    assert len(reads) == 2 * queues  # one per queue and ready state
    assert all("LIMIT 500" in sql for sql in reads), reads


def _quoted(name: str) -> str:
    return connection.ops.quote_name(name)


def test_a_failing_database_is_fleet_up_0_not_an_error_page(admin_client: Client, monkeypatch):
    def unreachable() -> set[str]:
        raise OperationalError("the database went away")

    monkeypatch.setattr(fleet.store, "paused_queues", unreachable)
    samples = scrape(admin_client)
    assert gauge(samples, "dispatch_jobs_fleet_up") == 0.0
    assert not any(name.startswith("dispatch_jobs_queue_") for name, _ in samples)


def test_the_ready_reads_walk_the_ready_index_in_order(admin_client: Client):
    if connection.vendor == "sqlite":
        pytest.skip("SQLite's plans are not comparable; the same partial index exists there")
    for i in range(200):
        enqueue(tasks.add, i, i, priority=i % 3)
    if connection.vendor == "postgresql":
        # Not on MariaDB: ANALYZE TABLE commits implicitly, which would end the
        # test's transaction and leave its rows to the tests after it.
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE dispatch_jobs_job")
    with CaptureQueriesContext(connection) as queries:
        scrape(admin_client)
    table = _quoted(Job._meta.db_table)
    reads = [q["sql"] for q in queries.captured_queries if f"FROM {table}" in q["sql"]]
    assert reads
    for sql in reads:
        plan = _plan(sql)
        # On MariaDB too since migration 0007 (the state-first twin took the name).
        assert "dj_job_ready" in plan and "sort" not in plan.lower(), plan


def _plan(sql: str) -> str:
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # Forbid the sequential scan and both sorts: a plan that needs one
            # still shows it, at a prohibitive cost. (On a small, churned test
            # table the planner may otherwise prefer another index plus an
            # incremental sort.)
            for setting in ("enable_seqscan", "enable_sort", "enable_incremental_sort"):
                cursor.execute(f"SET LOCAL {setting} = off")
        cursor.execute("EXPLAIN " + sql)
        return "\n".join(" ".join(str(cell) for cell in row) for row in cursor.fetchall())
