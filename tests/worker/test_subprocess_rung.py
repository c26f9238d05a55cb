"""The subprocess rung, with real ``runjobs --execution subprocess`` processes: a
handler that segfaults, exits, spins past its timeout or allocates past its memory
limit fails its own job, with the cause in its errors, while every job beside it
on the same worker completes exactly once; attempts are measured; a cancel kills
the child and the job ends cancelled."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from dispatch_jobs import store
from dispatch_jobs.models import Job, JobState, Usage, Worker
from tests.jobs import tasks
from tests.worker.processes import FAST, WorkerProcess, wait_until
from tests.worker.support import enqueue

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

Workers = Callable[..., WorkerProcess]
SUBPROCESS = ["--execution", "subprocess", "--concurrency", "3", *FAST]


def queued(task, *args) -> Job:  # noqa: ANN001 - a DispatchTask
    """Enqueue through the tasks backend, so the task's own options apply."""
    return Job.objects.get(pk=int(task.enqueue(*args).id))


def lines(directory: Path, name: str) -> int:
    path = directory / name
    return len(path.read_text().splitlines()) if path.exists() else 0


def finished(*jobs: Job) -> bool:
    return not Job.objects.filter(
        pk__in=[j.pk for j in jobs], state__in=[JobState.PENDING, JobState.RUNNING]
    ).exists()


def errors_of(job: Job) -> list[str]:
    from dispatch_jobs.compat import default_task_backend

    result = default_task_backend.get_result(str(job.pk))
    return [f"{e.exception_class_path}: {e.traceback}" for e in result.errors]


def innocents(directory: Path, count: int) -> list[Job]:
    return [queued(tasks.child_work, str(directory), f"n{i}", 4) for i in range(count)]


def assert_completed_once(directory: Path, jobs: list[Job]) -> None:
    for job in jobs:
        row = Job.objects.get(pk=job.pk)
        assert row.state == JobState.COMPLETED, (row.pk, row.state, row.last_error)
        assert lines(directory, f"done-{row.args[1]}") == 1
        assert row.evict_count == 0 and row.retry_count == 0
        assert len(row.attempts) == 1


@pytest.mark.parametrize(
    ("task", "args", "exception", "says"),
    [
        (tasks.segfault, (), "ChildDied", "killed by signal 11 (SIGSEGV)"),
        (tasks.exit_three, (), "ChildDied", "exited with code 3"),
        (tasks.spin_past_timeout, (), "JobTimedOut", "ran past its timeout of 1s"),
        (tasks.allocate_past_limit, (), "JobOutOfMemory", "out of memory"),
    ],
    ids=["segfault", "os._exit(3)", "spin past timeout", "allocate past memory limit"],
)
def test_a_crashing_handler_fails_its_job_alone(
    workers: Workers, tmp_path: Path, task, args, exception: str, says: str
) -> None:
    culprit = queued(task, *args)
    neighbours = innocents(tmp_path, 5)
    proc = workers(*SUBPROCESS)
    wait_until(lambda: finished(culprit, *neighbours), what="every job finished")
    row = Job.objects.get(pk=culprit.pk)
    assert row.state == JobState.FAILED, (row.state, row.last_error)
    assert exception in row.last_error and says in row.last_error, row.last_error
    assert row.attempts[-1]["exception_class"] == f"dispatch_jobs.exceptions.{exception}"
    assert any(exception in error for error in errors_of(row))
    assert_completed_once(tmp_path, neighbours)
    assert proc.alive(), "the worker survived its child"
    usage = Usage.objects.get(job_id=culprit.pk)
    assert usage.executor == "subprocess" and usage.status == JobState.FAILED
    assert usage.peak_rss > 0  # the child's, from the kernel even when it was killed
    if exception == "JobTimedOut":
        # It spun for its whole second: counted from the killed child's rusage.
        assert usage.cpu_time is not None and usage.cpu_time.total_seconds() > 0.1


def test_attempts_are_measured_in_the_child(workers: Workers, tmp_path: Path) -> None:
    jobs = innocents(tmp_path, 4)
    plain = enqueue(tasks.add, 1, 2)  # an in-process job, run by the same worker
    workers(*SUBPROCESS)
    wait_until(lambda: finished(*jobs, plain), what="the jobs finished")
    assert_completed_once(tmp_path, jobs)
    pids = {Job.objects.get(pk=j.pk).return_value["pid"] for j in jobs}
    assert len(pids) <= 3, "children are reused across jobs"
    for usage in Usage.objects.filter(job_id__in=[j.pk for j in jobs]):
        assert usage.executor == "subprocess"
        assert usage.cpu_time is not None and usage.cpu_time.total_seconds() > 0
        assert usage.peak_rss > 4 * 2**20
        assert usage.disk_written >= 2**20
    # The worker runs every job at its own rung: the in-process job too.
    assert Usage.objects.get(job_id=plain.pk).executor == "subprocess"


def test_outcomes_mean_what_they_mean_in_process(workers: Workers) -> None:
    refused = queued(tasks.child_raises)
    returned = queued(tasks.child_noop)
    workers(*SUBPROCESS)
    wait_until(lambda: finished(refused, returned), what="the jobs finished")
    row = Job.objects.get(pk=refused.pk)
    assert row.state == JobState.FAILED
    assert row.attempts[-1]["exception_class"] == "dispatch_jobs.exceptions.Permanent"
    assert "refused in a child" in row.attempts[-1]["traceback"]
    assert Job.objects.get(pk=returned.pk).state == JobState.COMPLETED


def test_cancel_kills_the_child_and_the_job_ends_cancelled(
    workers: Workers, tmp_path: Path
) -> None:
    job = enqueue(tasks.busy_sleep, 600.0, execution="subprocess")
    beside = queued(tasks.child_work, str(tmp_path), "beside", 4)
    proc = workers(*SUBPROCESS)
    wait_until(lambda: Job.objects.get(pk=job.pk).state == JobState.RUNNING, what="running")
    assert store.cancel_jobs([job.pk], by="ops-carol").requested == [job.pk]
    wait_until(
        lambda: Job.objects.get(pk=job.pk).state == JobState.CANCELLED,
        timeout=60,
        what="the job cancelled",
    )
    row = Job.objects.get(pk=job.pk)
    assert "ops-carol" in row.last_error
    assert "the child process was stopped" in row.attempts[-1]["message"]
    wait_until(lambda: finished(beside), what="its neighbour")
    assert_completed_once(tmp_path, [beside])
    assert proc.alive()


def test_an_in_process_worker_leaves_subprocess_jobs_and_says_its_rung(
    workers: Workers, tmp_path: Path
) -> None:
    isolated = queued(tasks.child_noop)
    plain = enqueue(tasks.add, 2, 2)
    proc = workers("--worker-id", "threads", *FAST)
    wait_until(lambda: finished(plain), what="the in-process job")
    assert Job.objects.get(pk=isolated.pk).state == JobState.PENDING
    assert "execution=in-process (runs in-process jobs)" in proc.log()
    assert Worker.objects.get(id="threads").execution == "in-process"
    other = workers("--worker-id", "children", *SUBPROCESS)
    wait_until(lambda: finished(isolated), what="the subprocess job")
    assert Job.objects.get(pk=isolated.pk).state == JobState.COMPLETED
    assert "execution=subprocess (runs in-process and subprocess jobs)" in other.log()


@pytest.mark.parametrize(("max_jobs", "pids"), [("", 1), ("1", 3)])
def test_children_are_reused_until_their_quota(
    workers: Workers, tmp_path: Path, max_jobs: str, pids: int
) -> None:
    jobs = [queued(tasks.child_work, str(tmp_path), f"r{i}", 1) for i in range(3)]
    args = ["--execution", "subprocess", "--concurrency", "1", *FAST]
    workers(*args, env={"DISPATCH_TEST_CHILD_MAX_JOBS": max_jobs})
    wait_until(lambda: finished(*jobs), what="the jobs finished")
    assert_completed_once(tmp_path, jobs)
    assert len({Job.objects.get(pk=j.pk).return_value["pid"] for j in jobs}) == pids
