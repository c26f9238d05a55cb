"""Cancelling a running job from the admin, in a real browser, with a real
``runjobs`` process running it: the operator opens the job, presses Cancel,
confirms, and the job ends cancelled within a heartbeat or so, with who asked in
its attempts log. Once per execution rung the worker provides."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from dispatch_jobs.models import Job, JobState
from tests.browser.pages import follow, log_in
from tests.jobs import tasks
from tests.worker.processes import FAST, WorkerProcess, wait_until
from tests.worker.support import enqueue

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

# The worker's arguments for each rung (in a child, the worker kills the child).
RUNGS = {
    "in-process": ["--execution", "in-process"],
    "subprocess": ["--execution", "subprocess"],
}


@pytest.fixture
def worker(tmp_path: Path) -> Iterator[list[WorkerProcess]]:
    started: list[WorkerProcess] = []
    yield started
    for process in started:
        process.stop()


def _state(job: Job) -> str:
    job.refresh_from_db()
    return job.state


@pytest.mark.parametrize("rung", list(RUNGS))
def test_a_running_job_cancelled_from_the_admin_ends_cancelled(
    rung: str, live_server, browser_page, screenshot, worker, tmp_path: Path
):
    job = enqueue(tasks.hold, str(tmp_path), execution=rung)
    process = WorkerProcess(tmp_path, "--worker-id", f"cancel-{rung}", *FAST, *RUNGS[rung])
    worker.append(process)
    wait_until(lambda: (tmp_path / f"start-{job.pk}").exists(), what="the job running")
    assert _state(job) == JobState.RUNNING

    page = browser_page
    log_in(page, live_server, f"/admin/dispatch_jobs/job/{job.pk}/change/")
    follow(page, "a.dj-action-cancel")
    page.wait_for_selector("input.dj-confirm-yes")
    assert page.get_attribute("input.dj-confirm-yes", "value") == "Yes, cancel 1 job"
    screenshot(f"cancel-running-{rung}-confirm")
    follow(page, "input.dj-confirm-yes")
    assert "1 running job(s) asked to stop" in page.inner_text("ul.messagelist")

    # The worker sees the request at its next heartbeat (0.5 s here).
    wait_until(lambda: _state(job) == JobState.CANCELLED, timeout=30, what="the job cancelled")
    assert not (tmp_path / f"done-{job.pk}").exists()
    assert [a["status"] for a in job.attempts] == ["cancelled"]
    assert "ops" in job.last_error

    page.goto(f"{live_server.url}/admin/dispatch_jobs/job/{job.pk}/change/")
    text = page.inner_text("#content")
    assert "cancelled" in text.lower() and "ops" in text
    assert "1 of 4 made" in text  # the stopped attempt counts
    screenshot(f"cancel-running-{rung}-done")
    assert process.alive()  # the worker lives on
