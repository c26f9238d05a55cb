"""The console's overview in a real browser: the dashboard and its charts,
auto-refresh following a real ``runjobs`` worker, a job's History page, the
job list at 1280 px with every column in view, and the task filter's choices."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection

from dispatch_jobs import store
from dispatch_jobs.models import Job
from tests.admin import builders
from tests.browser.conftest import ARTIFACTS
from tests.browser.pages import log_in
from tests.worker.processes import FAST, WorkerProcess

pytestmark = pytest.mark.django_db(transaction=True)


def _seed_history() -> None:
    """Finished jobs of three tasks, rolled up, for the charts and tables."""
    builders.completed(12, name="shop.tasks.send_receipt")
    builders.failed(4, name="shop.tasks.charge_card", error="CardDeclined: insufficient funds")
    builders.completed(3, name="shop.tasks.sync_stock", queue="emails")
    store.roll_up_finished_jobs(lag=timedelta(0))


def test_the_dashboard_draws_its_charts(live_server, browser_page, screenshot):
    _seed_history()
    builders.enqueue(5, name="shop.tasks.send_receipt")
    store.register_worker("w-1", hostname="ops-host", pid=1, queues=["default"], concurrency=4)
    page = browser_page
    log_in(page, live_server)
    page.goto(f"{live_server.url}/admin/dispatch_jobs/")
    hour = page.locator("#dj-chart-hour svg.dj-chart")
    day = page.locator("#dj-chart-day svg.dj-chart")
    for chart in (hour, day):
        box = chart.bounding_box()
        assert box and box["width"] > 300 and box["height"] > 50
    # Bars are drawn: the completed ones of this minute have height.
    heights = page.eval_on_selector_all(
        "#dj-chart-hour rect.dj-chart-completed", "els => els.map(e => e.getBBox().height)"
    )
    assert len(heights) == 60 and max(heights) > 0
    assert page.inner_text("[data-state=pending]") == "5"
    assert page.inner_text("[data-state=failed]") == "4"
    assert "shop.tasks.charge_card" in page.inner_text("table.dj-failing")
    assert page.inner_text(".dj-workers-alive") == "1"
    screenshot("10-dashboard")


def test_auto_refresh_follows_a_running_worker(live_server, browser_page, tmp_path):
    builders.enqueue(30, name="tests.jobs.tasks.add", payload={"args": [1, 2], "kwargs": {}})
    page = browser_page
    log_in(page, live_server)
    page.goto(f"{live_server.url}/admin/dispatch_jobs/")
    assert page.inner_text("[data-state=pending]") == "30"
    toggle = page.locator("#dj-refresh-toggle")
    assert not toggle.is_checked()  # off by default
    toggle.check()
    page.reload()
    assert page.locator("#dj-refresh-toggle").is_checked()  # remembered
    # A mark on the window proves the counts change without a page load.
    page.evaluate("window.djMark = 'still here'")
    worker = WorkerProcess(tmp_path, "--queue", "default", *FAST)
    try:
        page.wait_for_function(
            "document.querySelector('[data-state=completed]').textContent.trim() === '30'",
            timeout=90_000,
        )
        assert worker.alive(), worker.log()[-3000:]
    finally:
        worker.stop()
    assert page.inner_text("[data-state=pending]") == "0"
    assert page.evaluate("window.djMark") == "still here"


def test_a_jobs_history_page(live_server, browser_page, screenshot):
    job = builders.failed(1, name="shop.tasks.charge_card")[0]
    page = browser_page
    log_in(page, live_server)
    page.goto(f"{live_server.url}/admin/dispatch_jobs/job/?state=failed")
    page.check(f"input.action-select[value='{job.pk}']")
    page.select_option("select[name=action]", "retry_jobs")
    with page.expect_navigation():
        page.click("button[name=index]")
    with page.expect_navigation():
        page.click("input.dj-confirm-yes")
    page.goto(f"{live_server.url}/admin/dispatch_jobs/job/{job.pk}/change/")
    with page.expect_navigation():
        page.click("a.historylink")
    assert "Retried as job #" in page.inner_text("#change-history")
    screenshot("11-job-history")


def _seven_digit_ids() -> None:
    """Make the next job ids seven digits long, as a busy database has them (on
    PostgreSQL the sequence outlives each test, so ids there grow run by run)."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT setval(pg_get_serial_sequence(%s, 'id'), 1000000)",
                [Job._meta.db_table],
            )
    else:  # SQLite and MariaDB continue after the largest id
        builders.enqueue(1, name="shop.tasks.placeholder")
        Job.objects.filter(name="shop.tasks.placeholder").update(id=1_000_000)


def test_the_job_list_shows_every_column_at_1280_px(live_server, browser_page):
    _seven_digit_ids()
    builders.failed(
        3,
        name="shop.tasks.charge_card_with_a_rather_long_module_path.process",
        error="CardDeclined: the issuer declined the charge for reasons it would not give "
        "and a very long explanation follows",
        max_retries=4,
    )
    builders.completed(3, name="shop.tasks.send_receipt", queue="emails")
    builders.enqueue(3, name="shop.tasks.sync_stock", queue="low")
    page = browser_page
    page.set_viewport_size({"width": 1280, "height": 800})
    log_in(page, live_server)
    page.goto(f"{live_server.url}/admin/dispatch_jobs/job/")
    headers = page.locator("#result_list thead th")
    names = headers.all_inner_texts()
    assert [n.strip().upper() for n in names[1:]] == [
        "ID",
        "TASK",
        "QUEUE",
        "STATE",
        "ATTEMPTS",
        "ERROR",
        "ENQUEUED",
        "FINISHED",
        "RUN TIME",
    ]
    visible = page.evaluate(
        "() => { const r = document.querySelector('.results'); "
        "return {scroll: r.scrollWidth, client: r.clientWidth, "
        "right: r.getBoundingClientRect().right}; }"
    )
    assert visible["scroll"] <= visible["client"], visible  # nothing off to the side
    for index in range(headers.count()):
        box = headers.nth(index).bounding_box()
        assert box is not None and box["width"] > 0, names[index]
        assert box["x"] >= 0 and box["x"] + box["width"] <= min(1280, visible["right"]) + 1, (
            names[index],
            box,
        )
    assert "1/5" in page.inner_text("#result_list")
    errors = page.locator("#result_list td.field-error_summary").all_inner_texts()
    assert sum("CardDeclined" in text for text in errors) == 3
    folder = ARTIFACTS / connection.vendor
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / "13-job-list-1280.png"), full_page=False)
    assert (folder / "13-job-list-1280.png").stat().st_size > 10_000


def test_the_task_filter_offers_the_known_tasks(live_server, browser_page, screenshot):
    _seed_history()
    pending = builders.enqueue(2, name="shop.tasks.charge_card")
    page = browser_page
    log_in(page, live_server)
    page.goto(f"{live_server.url}/admin/dispatch_jobs/job/")
    options = page.eval_on_selector_all("#dj-options-task option", "els => els.map(e => e.value)")
    assert options == [
        "shop.tasks.charge_card",
        "shop.tasks.send_receipt",
        "shop.tasks.sync_stock",
    ]
    # A part of a name, typed into the box, finds that task's jobs.
    page.fill("input[name=task]", "charge_c")
    with page.expect_navigation():
        page.press("input[name=task]", "Enter")
    rows = page.locator("#result_list tbody tr")
    assert rows.count() == 4 + len(pending)
    # A known name, picked from the links, is an exact filter.
    page.goto(f"{live_server.url}/admin/dispatch_jobs/job/")
    with page.expect_navigation():
        page.click("details[data-filter-title='task name'] a[title='shop.tasks.sync_stock']")
    assert page.locator("#result_list tbody tr").count() == 3
    screenshot("12-task-filter")
