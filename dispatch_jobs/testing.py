"""Helpers for your own tests: run enqueued jobs inline, assert what was enqueued,
clear the queue.

    from dispatch_jobs import testing

    def test_signup_sends_welcome_email(client):
        client.post("/signup/", {...})
        testing.assert_enqueued(send_welcome_email, kwargs={"user_id": 1})
        assert testing.run_jobs() == 1

Jobs are real rows in the real database, and ``run_jobs`` goes through the real
worker pipeline (claim, lease, executor, fenced completion) in the calling thread,
so what passes here is what a ``runjobs`` worker would do. Tests that run jobs
need database access (``@pytest.mark.django_db``); ``transaction=True`` is not
required, since everything happens on the test's own connection.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from .compat import Task
from .models import READY_STATES, Job
from .store import delete_all_jobs, reads

__all__ = [
    "assert_enqueued",
    "assert_not_enqueued",
    "clear_jobs",
    "enqueued_jobs",
    "run_jobs",
]


def run_jobs(queues: Sequence[str] | None = None, max_jobs: int | None = None) -> int:
    """Run ready jobs in this thread until none is ready (or ``max_jobs`` ran).

    ``queues=None`` runs every queue. Returns how many jobs ran, whatever their
    outcome; read outcomes with ``result.refresh()``. A job that fails and is
    scheduled to retry later is not ready, so this always ends.
    """
    # Imported here: the worker is only needed by tests that run jobs.
    from .worker.inline import drain

    return drain(queues=list(queues) if queues is not None else None, max_jobs=max_jobs)


def enqueued_jobs(
    task: Task | str | None = None,
    *,
    queue: str | None = None,
    states: Sequence[str] = READY_STATES,
) -> list[Job]:
    """Jobs waiting to run (pending or retrying), oldest first; optionally only
    those of ``task`` (a task, or the name a row stores) or of one ``queue``."""
    jobs = reads.jobs().filter(state__in=list(states)).order_by("id")
    if task is not None:
        jobs = jobs.filter(name=_name_of(task))
    if queue is not None:
        jobs = jobs.filter(queue=queue)
    return list(jobs)


def assert_enqueued(
    task: Task | str,
    args: Sequence[Any] | None = None,
    kwargs: Mapping[str, Any] | None = None,
    *,
    count: int | None = None,
    queue: str | None = None,
) -> list[Job]:
    """Assert that ``task`` is waiting to run, with exactly these ``args`` and/or
    ``kwargs`` when given (compared as stored, i.e. as JSON: tuples are lists), and
    ``count`` times when given. Returns the matching jobs."""
    waiting = enqueued_jobs(task, queue=queue)
    matching = [job for job in waiting if _matches(job, args, kwargs)]
    expected = f"{count} job(s)" if count is not None else "a job"
    if (count is None and not matching) or (count is not None and len(matching) != count):
        raise AssertionError(
            f"Expected {expected} of {_name_of(task)!r}{_describe_call(args, kwargs)}"
            f"{f' on queue {queue!r}' if queue else ''}, found {len(matching)}. "
            f"Waiting jobs of this task: {_describe_jobs(waiting)}"
        )
    return matching


def assert_not_enqueued(
    task: Task | str,
    args: Sequence[Any] | None = None,
    kwargs: Mapping[str, Any] | None = None,
) -> None:
    """Assert that no job of ``task`` (with these arguments, when given) is waiting."""
    matching = [job for job in enqueued_jobs(task) if _matches(job, args, kwargs)]
    if matching:
        raise AssertionError(
            f"Expected no job of {_name_of(task)!r}{_describe_call(args, kwargs)}, found "
            f"{len(matching)}: {_describe_jobs(matching)}"
        )


def clear_jobs(queues: Sequence[str] | None = None) -> int:
    """Delete every job (or every job in ``queues``), whatever its state. Returns
    how many were deleted."""
    return delete_all_jobs(list(queues) if queues is not None else None)


def _name_of(task: Task | str) -> str:
    if isinstance(task, str):
        return task
    return str(getattr(task, "job_name", None) or task.module_path)


def _as_json(value: object) -> object:
    return json.loads(json.dumps(value))


def _matches(job: Job, args: Sequence[Any] | None, kwargs: Mapping[str, Any] | None) -> bool:
    if args is not None and job.args != _as_json(list(args)):
        return False
    return kwargs is None or job.kwargs == _as_json(dict(kwargs))


def _describe_call(args: Sequence[Any] | None, kwargs: Mapping[str, Any] | None) -> str:
    parts = []
    if args is not None:
        parts.append(f"args={list(args)!r}")
    if kwargs is not None:
        parts.append(f"kwargs={dict(kwargs)!r}")
    return f" with {', '.join(parts)}" if parts else ""


def _describe_jobs(jobs: Sequence[Job]) -> str:
    if not jobs:
        return "none."
    shown = "; ".join(
        f"#{job.pk} args={job.args!r} kwargs={job.kwargs!r} queue={job.queue!r}"
        for job in jobs[:10]
    )
    return shown + (f"; and {len(jobs) - 10} more." if len(jobs) > 10 else ".")
