"""Cancelling a running job from the admin, in a real browser, with a real worker
at each rung: the job ends cancelled, with who asked (in-process, the handler's
context reports it; in a child, the worker kills the child)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import User

from dispatch_jobs.models import Job, JobState
from tests.jobs import tasks
from tests.worker.processes import FAST, WorkerProcess, wait_until
from tests.worker.support import enqueue

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


@pytest.mark.parametrize("rung", ["in-process", "subprocess"])
def test_a_running_job_cancelled_from_the_admin_ends_cancelled(
    live_server, browser_page, screenshot, tmp_path: Path, rung: str
) -> None:
    User.objects.create_superuser("ops", "ops@example.com", "correct horse")
    job = enqueue(tasks.hold, str(tmp_path), execution=rung)
    worker = WorkerProcess(tmp_path, "--execution", rung, *FAST)
    try:
        wait_until(lambda: (tmp_path / f"start-{job.pk}").exists(), what="the job running")
        page = browser_page
        page.goto(f"{live_server.url}/admin/")
        page.fill("#id_username", "ops")
        page.fill("#id_password", "correct horse")
        with page.expect_navigation():
            page.click("input[type=submit]")
        page.goto(f"{live_server.url}/admin/dispatch_jobs/job/{job.pk}/change/")
        with page.expect_navigation():
            page.click("a.dj-action-cancel")
        page.wait_for_selector("input.dj-confirm-yes")
        with page.expect_navigation():
            page.click("input.dj-confirm-yes")
        assert "asked to stop" in page.inner_text("ul.messagelist")
        screenshot(f"cancel-running-{rung}")
        wait_until(
            lambda: Job.objects.get(pk=job.pk).state == JobState.CANCELLED,
            what="the job cancelled",
        )
        row = Job.objects.get(pk=job.pk)
        assert "ops" in row.last_error and [a["status"] for a in row.attempts] == ["cancelled"]
        assert not (tmp_path / f"done-{job.pk}").exists()
        assert worker.alive()
    finally:
        worker.stop()
