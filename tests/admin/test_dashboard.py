"""The dashboard on the app's admin index: counts by state and queue (bounded,
cached), throughput charts and task tables from the rollup, workers alive."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from dispatch_jobs import store
from dispatch_jobs.models import Job
from tests.stored_json import deepest_nesting, set_json_text

from . import builders

pytestmark = pytest.mark.django_db
URL = reverse("admin:app_list", args=["dispatch_jobs"])
NOW = timedelta(0)


def _page(client) -> str:
    response = client.get(URL)
    assert response.status_code == 200
    return response.content.decode()


def _count(page: str, state: str) -> str:
    match = re.search(rf'data-state="{state}">([^<]*)<', page)
    assert match, state
    return match.group(1)


def test_the_dashboard_shows_states_queues_charts_tasks_and_workers(admin_client_):
    builders.enqueue(4, name="shop.sync", queue="emails")
    builders.completed(3, name="shop.send")
    builders.failed(2, name="shop.charge", error="CardDeclined: no")
    builders.running(1, name="shop.send")
    store.register_worker("w-1", hostname="h", pid=1, queues=["default"], concurrency=2)
    store.roll_up_finished_jobs(lag=NOW)
    page = _page(admin_client_)
    assert [_count(page, s) for s in ("pending", "running", "completed", "failed")] == [
        "4",
        "1",
        "3",
        "2",
    ]
    assert re.search(r'data-queue="emails">.*?class="dj-ready">4<', page, re.S)
    assert re.search(r'data-queue="default">.*?class="dj-running">1<', page, re.S)
    # Two inline SVG charts; the hour one has a bar per minute.
    assert page.count('<svg class="dj-chart"') == 2
    assert page.count('<g class="dj-chart-bar">') == 60
    assert "3 completed, 2 failed" in page
    slowest = page[page.index('class="dj-slowest"') :]
    assert "shop.send" in slowest and "shop.charge" in slowest
    failing = page[page.index('class="dj-failing"') :]
    assert "shop.charge" in failing and "100%" in failing
    assert '<strong class="dj-workers-alive">1</strong>' in page


def test_the_dashboard_loads_nothing_from_the_network(admin_client_):
    page = _page(admin_client_)
    external = re.findall(r'(?:src|href)="(https?:)?//', page)
    assert external == []
    assert "refresh.js" in page and 'id="dj-refresh-toggle"' in page


def test_counts_over_the_threshold_are_capped(admin_client_):
    builders.enqueue(6)
    with override_settings(DISPATCH_JOBS={"ADMIN_COUNT_THRESHOLD": 5}):
        page = _page(admin_client_)
    assert _count(page, "pending") == "5+"


def _statements(client) -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        _page(client)
    return [q["sql"] for q in captured.captured_queries]


def _reads(sql: list[str]) -> list[str]:
    return [q for q in sql if q.lstrip("(").startswith("SELECT") and "set_config" not in q]


def test_the_dashboard_costs_the_same_however_many_jobs_tasks_and_queues(admin_client_):
    builders.completed(2)
    store.roll_up_finished_jobs(lag=NOW)
    small = _statements(admin_client_)
    cache.clear()
    # Many more jobs, tasks, queues (declared by a worker and by a paused
    # queue's control row), running jobs and workers.
    store.enqueue_jobs([Job(name=f"t{i % 7}", queue=f"q{i % 5}") for i in range(500)])
    builders.completed(20, name="other")
    builders.running(3, name="other", queue="elsewhere")
    store.register_worker("w-1", hostname="h", pid=1, queues=["extra"], concurrency=4)
    store.pause_queue("paused-one")
    store.roll_up_finished_jobs(lag=NOW)
    larger = _statements(admin_client_)
    page = _page(admin_client_)
    for queue in ("extra", "paused-one", "elsewhere"):
        assert f'data-queue="{queue}"' in page, queue
    assert len(larger) == len(small), (small, larger)
    # Session and user, then the dashboard's four: the clock, the small tables
    # (queues and workers), every count of jobs (one UNION ALL), the rollup
    # (one UNION ALL).
    reads = _reads(larger)
    assert len(reads) == 6, reads
    assert len([q for q in reads if "dispatch_jobs_job" in q]) == 1


def test_the_numbers_are_cached_for_a_few_seconds(admin_client_):
    _page(admin_client_)
    builders.enqueue(3)
    with CaptureQueriesContext(connection) as captured:
        page = _page(admin_client_)
    assert not [q for q in captured.captured_queries if "dispatch_jobs_job" in q["sql"]]
    assert _count(page, "pending") == "0"  # the cached snapshot
    cache.clear()
    assert _count(_page(admin_client_), "pending") == "3"


def test_users_who_cannot_view_jobs_see_no_dashboard(operator, viewer_client):
    from django.contrib.auth.models import Permission, User
    from django.test import Client

    user = User.objects.create_user("queues_only", password="pw", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_worker"))
    client = Client()
    client.force_login(user)
    assert "dj-dashboard" not in _page(client)
    assert "dj-dashboard" in _page(viewer_client)


def test_the_charts_place_each_minute_of_the_rollup_in_its_window(admin_client_):
    from dispatch_jobs.models import TaskMinute
    from dispatch_jobs.store import db

    minute = db.database_now().replace(second=0, microsecond=0)

    def bucket(ago: timedelta, name: str, completed: int, failed: int) -> None:
        TaskMinute.objects.create(
            minute=minute - ago,
            name=name,
            queue="default",
            completed=completed,
            failed=failed,
            run_ms_total=1000 * (completed + failed),
            run_ms_max=1000,
        )

    bucket(timedelta(minutes=5), "shop.a", 7, 1)  # in the hour and the day
    bucket(timedelta(minutes=5), "shop.b", 2, 0)  # same minute, another task
    bucket(timedelta(minutes=90), "shop.a", 30, 3)  # the day only
    bucket(timedelta(hours=23, minutes=59), "shop.c", 4, 0)  # the day's first minute
    bucket(timedelta(days=1), "shop.old", 100, 100)  # a minute before the day
    page = _page(admin_client_)
    assert "Last hour, per minute: 9 completed, 1 failed" in page
    assert "Last 24 hours, per minute: 43 completed, 4 failed" in page
    hour = page[page.index('id="dj-chart-hour"') : page.index('id="dj-chart-day"')]
    assert re.search(r"<title>\d\d:\d\d: 9 completed, 1 failed</title>", hour)
    assert "shop.old" not in page
    slowest = page[page.index('class="dj-slowest"') :]
    assert re.search(r"shop\.a</a></td><td>41<", slowest)


def test_the_day_line_skips_the_inside_of_flat_runs():
    from dispatch_jobs.admin import charts

    svg = charts.lines([0, 0, 0, 5, 5, 5, 0], [0] * 7, ("a", "b"), "t", "span")
    completed = re.search(r'class="dj-chart-completed" fill="none" points="([^"]*)"', svg)
    failed = re.search(r'class="dj-chart-failed" fill="none" points="([^"]*)"', svg)
    assert completed and failed
    # Ends, the run's last zero, the fives' ends, the last zero: 0, 2, 3, 5, 6.
    assert len(completed.group(1).split()) == 5
    assert len(failed.group(1).split()) == 2  # flat all day: its two ends
    assert "span: 15 completed, 0 failed" in svg


@pytest.mark.parametrize("stored", ["5", '{"a": 1}', '[1, ["x"], "kept"]', "deep"])
def test_a_worker_row_holding_odd_queues_json_leaves_the_pages_up(admin_client_, stored):
    """The fleet read (dashboard, queue filter) takes each worker's stored queues
    as they are: not a list, not names, or nested deeper than Python's decoder
    follows, they add no queue name and fail no page."""
    from dispatch_jobs.models import Worker

    store.register_worker("w-odd", hostname="h", pid=1, queues=["default"], concurrency=1)
    text = deepest_nesting() if stored == "deep" else stored
    if not set_json_text(Worker, "w-odd", "queues", text):
        pytest.skip(f"{connection.vendor} refuses JSON this deep: no such row can be stored")
    cache.clear()
    _page(admin_client_)
    listed = admin_client_.get(reverse("admin:dispatch_jobs_job_changelist"))
    assert listed.status_code == 200
    if stored.startswith("[1"):
        assert "kept" in listed.content.decode()  # the names in it still count
