"""The operations console in a real browser: log in, filter, page forward and
back, retry a failed job through the confirmation page, pause a queue."""

from __future__ import annotations

import pytest

from dispatch_jobs import store
from dispatch_jobs.models import Job, JobState
from tests.admin import builders
from tests.browser.pages import follow, log_in

pytestmark = pytest.mark.django_db(transaction=True)


def _row_ids(page) -> list[int]:
    return [
        int(text) for text in page.locator("#result_list tbody th.field-id a").all_inner_texts()
    ]


def test_operating_the_job_queue_from_the_admin(live_server, browser_page, screenshot, settings):
    settings.DISPATCH_JOBS = {"LIST_PAGE_SIZE": 20}
    receipts = builders.enqueue(45, name="shop.tasks.send_receipt", queue="default")
    builders.enqueue(5, name="shop.tasks.sync_stock", queue="emails")
    failed = builders.failed(
        3, name="shop.tasks.charge_card", error="CardDeclined: insufficient funds"
    )
    page = browser_page

    log_in(page, live_server)

    # The job list, filtered to failed jobs from the sidebar.
    page.goto(f"{live_server.url}/admin/dispatch_jobs/job/")
    page.get_by_role("link", name="Failed", exact=True).click()
    page.wait_for_url("**/job/?state=failed")
    assert sorted(_row_ids(page)) == sorted(j.pk for j in failed)
    screenshot("01-jobs-filtered-failed")

    # Page forward twice and back once, without filters.
    page.goto(f"{live_server.url}/admin/dispatch_jobs/job/")
    first = _row_ids(page)
    assert len(first) == 20
    screenshot("02-jobs-first-page")
    follow(page, "a.dj-next")
    second = _row_ids(page)
    follow(page, "a.dj-next")
    third = _row_ids(page)
    assert len(second) == 20 and len(third) == 13
    assert not set(first) & set(second) and not set(second) & set(third)
    follow(page, "a.dj-previous")
    assert _row_ids(page) == second
    screenshot("03-jobs-paged-back")
    follow(page, "a.dj-first")
    assert _row_ids(page) == first

    # Retry one failed job through the confirmation page.
    target = failed[0]
    page.goto(f"{live_server.url}/admin/dispatch_jobs/job/?state=failed")
    page.check(f"input.action-select[value='{target.pk}']")
    page.select_option("select[name=action]", "retry_jobs")
    follow(page, "button[name=index]")
    page.wait_for_selector("input.dj-confirm-yes")
    screenshot("04-retry-confirmation")
    follow(page, "input.dj-confirm-yes")
    page.wait_for_selector("ul.messagelist")
    assert "1 job(s) retried" in page.inner_text("ul.messagelist")
    screenshot("05-retried")
    replay = Job.objects.get(replay_of=target)
    assert replay.state == JobState.PENDING

    # Pause a queue.
    page.goto(f"{live_server.url}/admin/dispatch_jobs/queuecontrol/")
    follow(page, "tr[data-queue='emails'] input.dj-pause")
    page.wait_for_selector("ul.messagelist")
    assert page.inner_text("tr[data-queue='emails'] td.dj-queue-status") == "paused"
    screenshot("06-queue-paused")
    assert store.paused_queues() == {"emails"}

    # The workers and dead-letter views, for the docs.
    store.register_worker(
        "ops-host-1",
        hostname="ops-host",
        pid=4242,
        queues=["default", "emails"],
        concurrency=4,
        capacity={"cpu": 4000},
    )
    builders.claim(receipts[:2], worker_id="ops-host-1")
    page.goto(f"{live_server.url}/admin/dispatch_jobs/worker/")
    assert "ops-host" in page.inner_text("#result_list")
    screenshot("08-workers")
    page.goto(f"{live_server.url}/admin/dispatch_jobs/job/dead-letter/")
    assert "CardDeclined" in page.inner_text("#result_list")
    screenshot("09-dead-letter")

    # And a job's detail page, for the docs.
    page.goto(f"{live_server.url}/admin/dispatch_jobs/job/{target.pk}/change/")
    page.wait_for_selector("pre.dj-traceback")
    screenshot("07-job-detail")
