"""Queues (with pause/resume), workers, dead letter and usage views."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.admin.models import LogEntry
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from dispatch_jobs import store
from dispatch_jobs.admin.usage import percentile
from dispatch_jobs.conf import settings
from dispatch_jobs.models import Job, Usage, Worker
from dispatch_jobs.store import ClaimOptions, db

from . import builders

pytestmark = pytest.mark.django_db
QUEUES = reverse("admin:dispatch_jobs_queuecontrol_changelist")


def _row(response, name: str):
    return next(row for row in response.context["rows"] if row.name == name)


@override_settings(
    TASKS={"default": {"BACKEND": "dispatch_jobs.backend.DispatchBackend", "QUEUES": ["mail"]}}
)
def test_queues_show_counts_and_the_oldest_ready_age(admin_client_):
    now = db.database_now()
    builders.enqueue(3, queue="mail")
    builders.enqueue(1, queue="mail", run_at=now + timedelta(hours=1))
    builders.enqueue(1, queue="mail", run_at=now - timedelta(minutes=10))
    builders.running(1, queue="mail")
    builders.failed(2, queue="mail")
    response = admin_client_.get(QUEUES)
    assert response.status_code == 200
    mail = _row(response, "mail")
    assert (mail.ready, mail.scheduled, mail.running, mail.failed) == (4, 1, 1, 2)
    assert timedelta(minutes=9) < mail.oldest_ready_age < timedelta(minutes=30)
    assert _row(response, "default").ready == 0


def test_queue_counts_are_capped(admin_client_):
    builders.enqueue(4)
    with override_settings(DISPATCH_JOBS={"ADMIN_COUNT_THRESHOLD": 3}):
        response = admin_client_.get(QUEUES)
    assert _row(response, "default").ready is None
    assert b"3+" in response.content


def test_pausing_a_queue_stops_claims_until_resumed(operator):
    client = operator("pause_queue")
    job = builders.enqueue(1, queue="reports")[0]
    response = client.post(reverse("admin:dispatch_jobs_queue_pause"), {"queue": "reports"})
    assert response.status_code == 302
    assert store.paused_queues() == {"reports"}
    assert store.claim_jobs(ClaimOptions(queues=["reports"], limit=5)) == []
    page = client.get(QUEUES)
    assert _row(page, "reports").paused and b"Resume" in page.content
    assert LogEntry.objects.filter(change_message="Paused queue 'reports'.").exists()
    client.post(reverse("admin:dispatch_jobs_queue_resume"), {"queue": "reports"})
    assert store.paused_queues() == set()
    assert [j.pk for j in store.claim_jobs(ClaimOptions(queues=["reports"], limit=5))] == [job.pk]


def test_pause_needs_its_permission_and_a_post(viewer_client, admin_client_):
    page = viewer_client.get(QUEUES)
    assert page.status_code == 200 and b"dj-pause" not in page.content
    pause = reverse("admin:dispatch_jobs_queue_pause")
    assert viewer_client.post(pause, {"queue": "default"}).status_code == 403
    assert admin_client_.get(pause).status_code == 405
    assert store.paused_queues() == set()


def test_workers_show_capacity_heartbeat_staleness_and_held_jobs(admin_client_):
    store.register_worker(
        "w-live", hostname="h1", pid=11, queues=["default"], concurrency=4, capacity={"cpu": 2000}
    )
    store.register_worker("w-old", hostname="h2", pid=12, queues=["mail"], concurrency=1)
    # Test-only: no store path makes a worker fall silent but time itself.
    Worker.objects.filter(id="w-old").update(last_seen_at=db.now_minus(timedelta(hours=1)))
    held = builders.claim(builders.enqueue(2), worker_id="w-live")
    response = admin_client_.get(reverse("admin:dispatch_jobs_worker_changelist"))
    assert response.status_code == 200
    rows = {row.worker.id: row for row in response.context["rows"]}
    assert not rows["w-live"].stale and rows["w-old"].stale
    assert [j.pk for j in rows["w-live"].held] == sorted(j.pk for j in held)
    assert rows["w-old"].held == []
    assert b"STALE" in response.content and b"h1" in response.content


def test_workers_show_the_rung_they_run_jobs_at(admin_client_):
    store.register_worker(
        "w-kids", hostname="h", pid=1, queues=["default"], concurrency=2, execution="subprocess"
    )
    store.register_worker("w-threads", hostname="h", pid=2, queues=["default"], concurrency=2)
    response = admin_client_.get(reverse("admin:dispatch_jobs_worker_changelist"))
    html = response.content.decode()
    assert "<th>Execution</th>" in html
    assert html.count(">subprocess</td>") == 1 and html.count(">in-process</td>") == 1


def test_workers_whose_claims_keep_failing_show_unhealthy_with_the_error(admin_client_):
    for worker_id in ("w-failing", "w-blip", "w-fine"):
        store.register_worker(worker_id, hostname="h", pid=1, queues=["default"], concurrency=1)
    beat = settings.heartbeat_interval
    store.touch_worker("w-failing", claim_error="OperationalError: <b>x</b>", failing_for=2 * beat)
    store.touch_worker("w-blip", claim_error="OperationalError: blip", failing_for=timedelta(0))
    response = admin_client_.get(reverse("admin:dispatch_jobs_worker_changelist"))
    rows = {row.worker.id: row for row in response.context["rows"]}
    assert rows["w-failing"].unhealthy == "OperationalError: <b>x</b>"
    assert rows["w-blip"].unhealthy == "" and rows["w-fine"].unhealthy == ""
    html = response.content.decode()
    assert "unhealthy: OperationalError: &lt;b&gt;x&lt;/b&gt;" in html  # escaped
    assert html.count('class="dj-unhealthy-flag"') == 1


def test_dead_letter_groups_by_task_and_error_class(admin_client_):
    builders.failed(3, name="app.a", error="ValueError: bad")
    builders.failed(1, name="app.a", error="KeyError: 'k'")
    retried = builders.failed(1, name="app.b", error="ValueError: bad")[0]
    store.replay_jobs([retried.pk])  # retried ones leave the dead letter
    response = admin_client_.get(reverse("admin:dispatch_jobs_job_deadletter"))
    groups = [(g.task, g.error_class, g.count) for g in response.context["groups"]]
    assert groups == [("app.a", "ValueError", 3), ("app.a", "KeyError", 1)]
    first = response.context["groups"][0]
    assert first.first_seen <= first.last_seen


def test_retrying_a_dead_letter_group_is_capped(admin_client_):
    jobs = builders.failed(3, name="app.a", error="ValueError: bad")
    builders.failed(1, name="app.a", error="KeyError: 'k'")
    retry = reverse("admin:dispatch_jobs_job_deadletter_retry")
    with override_settings(DISPATCH_JOBS={"ADMIN_BULK_CAP": 2}):
        confirm = admin_client_.get(retry, {"task": "app.a", "error": "ValueError"})
    assert confirm.status_code == 200
    ids = confirm.context["ids"]
    newest_two = sorted(j.pk for j in jobs)[-2:]
    assert sorted(int(i) for i in ids.split(",")) == newest_two
    admin_client_.post(
        reverse("admin:dispatch_jobs_job_action", args=["retry"]), {"ids": ids, "confirm": "yes"}
    )
    assert Job.objects.filter(replay_of__isnull=False).count() == 2
    empty = admin_client_.get(retry, {"task": "app.zzz", "error": "ValueError"})
    assert empty.status_code == 302


def _usage(name: str, seconds: float, status: str = "completed") -> Usage:
    return Usage(
        job_id=1,
        name=name,
        queue="default",
        attempt=1,
        status=status,
        wall_time=timedelta(seconds=seconds),
    )


def test_usage_list_pages_without_count_or_offset(admin_client_):
    store.record_usages([_usage("t", 1) for _ in range(7)])
    url = reverse("admin:dispatch_jobs_usage_changelist")
    with override_settings(DISPATCH_JOBS={"LIST_PAGE_SIZE": 5}):
        first = admin_client_.get(url)
        with CaptureQueriesContext(connection) as captured:
            second = admin_client_.get(url + first.context["cl"].next_link)
    assert len(first.context["cl"].result_list) == 5
    assert len(second.context["cl"].result_list) == 2
    sql = " ".join(q["sql"].upper() for q in captured.captured_queries)
    assert "COUNT(" not in sql and " OFFSET " not in sql


def test_usage_summary_per_task(admin_client_):
    store.record_usages(
        [_usage("fast", s / 10) for s in range(1, 11)]
        + [_usage("slow", 30, "failed"), _usage("slow", 10)]
    )
    response = admin_client_.get(reverse("admin:dispatch_jobs_usage_summary"), {"window": "1h"})
    rows = {row.name: row for row in response.context["rows"]}
    assert rows["fast"].count == 10 and rows["fast"].failure_rate == 0
    assert rows["fast"].p50 == timedelta(seconds=0.5)
    assert rows["fast"].p95 == timedelta(seconds=1)
    assert rows["slow"].failure_rate == 0.5 and rows["slow"].p95 == timedelta(seconds=30)
    assert b"50%" in response.content


def test_percentile_is_nearest_rank():
    values = [timedelta(seconds=s) for s in range(1, 21)]
    assert percentile(values, 0.5) == timedelta(seconds=10)
    assert percentile(values, 0.95) == timedelta(seconds=19)
    assert percentile(values[:1], 0.95) == timedelta(seconds=1)


def test_every_view_loads_for_a_viewer_and_needs_a_login(viewer_client, client):
    urls = [
        reverse("admin:dispatch_jobs_job_changelist"),
        reverse("admin:dispatch_jobs_job_deadletter"),
        QUEUES,
        reverse("admin:dispatch_jobs_worker_changelist"),
        reverse("admin:dispatch_jobs_usage_changelist"),
        reverse("admin:dispatch_jobs_usage_summary"),
    ]
    for url in urls:
        assert viewer_client.get(url).status_code == 200, url
        assert client.get(url).status_code == 302, url  # to the login page
