"""The schedules page in a real browser: add a schedule with a bad cron expression
(the form says what is wrong), fix it, disable it and run it now from the list."""

from __future__ import annotations

import pytest

from dispatch_jobs.models import Job, Schedule
from tests.browser.pages import follow, log_in

pytestmark = pytest.mark.django_db(transaction=True)


def _act(page, action: str, name: str) -> None:
    page.locator("#result_list tr", has_text=name).locator("input.action-select").check()
    page.select_option("select[name=action]", action)
    follow(page, "button[name=index]")


def test_managing_schedules_from_the_admin(live_server, browser_page, screenshot):
    page = browser_page
    log_in(page, live_server, "/admin/dispatch_jobs/schedule/")
    page.wait_for_selector("#changelist")
    screenshot("20-schedules-empty")

    # Add one with a typo in the cron expression and in the zone.
    page.goto(f"{live_server.url}/admin/dispatch_jobs/schedule/add/")
    page.fill("#id_name", "nightly-sum")
    page.fill("#id_task", "tests.jobs.tasks.add")
    page.fill("#id_cron", "0 26 * * *")
    page.fill("#id_timezone", "Europe/Pari")
    page.fill("#id_args", "[1, 2]")
    follow(page, "input[name=_save]")
    errors = page.locator(".errorlist").all_inner_texts()
    assert any("is not valid" in text for text in errors), errors
    assert any("Unknown time zone 'Europe/Pari'" in text for text in errors), errors
    screenshot("21-schedule-form-errors")
    page.fill("#id_cron", "0 2 * * *")
    page.fill("#id_timezone", "Europe/Paris")
    follow(page, "input[name=_save]")
    page.wait_for_selector("#result_list")
    row = page.locator("#result_list tr", has_text="nightly-sum")
    assert "0 2 * * * (Europe/Paris)" in row.inner_text()
    screenshot("22-schedules-list")

    # Run it now, then disable it.
    _act(page, "run_schedules_now", "nightly-sum")
    job = Job.objects.get()
    assert f"job #{job.pk} enqueued" in page.locator(".messagelist").inner_text()
    assert (
        f"#{job.pk} pending" in page.locator("#result_list tr", has_text="nightly-sum").inner_text()
    )
    _act(page, "disable_schedules", "nightly-sum")
    assert "1 schedule(s) disabled." in page.locator(".messagelist").inner_text()
    assert "disabled" in page.locator("#result_list tr", has_text="nightly-sum").inner_text()
    assert Schedule.objects.get(name="nightly-sum").enabled is False
    screenshot("23-schedule-disabled")
