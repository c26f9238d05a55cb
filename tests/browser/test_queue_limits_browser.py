"""The queues view's limits in a real browser: open a queue's limits form, get a
clear error for a bad rate, fix it, and see the limit in the queues table."""

from __future__ import annotations

from datetime import timedelta

import pytest

from dispatch_jobs import store
from dispatch_jobs.queue_limits import QueueLimits
from tests.browser.pages import follow, log_in

pytestmark = pytest.mark.django_db(transaction=True)


def test_editing_a_queues_limits_from_the_queues_view(live_server, browser_page, screenshot):
    page = browser_page
    log_in(page, live_server, "/admin/dispatch_jobs/queuecontrol/")
    row = "tr[data-queue='emails']"
    assert page.inner_text(f"{row} td.dj-queue-limits").startswith("none")
    follow(page, f"{row} a.dj-edit-limits")
    page.fill("#id_max_running", "5")
    page.fill("#id_rate_limit", "100")
    page.fill("#id_rate_period", "half a minute")
    follow(page, "input[type=submit].default")
    errors = page.locator(".errorlist").all_inner_texts()
    assert any("cannot read 'half a minute' as a duration" in text for text in errors), errors
    screenshot("30-queue-limits-form-errors")
    page.fill("#id_rate_period", "1m")
    follow(page, "input[type=submit].default")
    assert "5 running, 100 per 1m" in page.inner_text(f"{row} td.dj-queue-limits")
    screenshot("31-queues-with-limits")
    expected = QueueLimits(max_running=5, rate_limit=100, rate_period=timedelta(minutes=1))
    assert store.queue_limits("emails")[0] == expected
