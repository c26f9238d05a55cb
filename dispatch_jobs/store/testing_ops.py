"""Bulk removal for test suites (``dispatch_jobs.testing.clear_jobs``)."""

from __future__ import annotations

from collections.abc import Sequence

from ..models import Job
from . import db


def delete_all_jobs(queues: Sequence[str] | None = None) -> int:
    """Delete every job (or every job in ``queues``), whatever its state, in one
    statement. For tests only: unlike ``delete_jobs`` it does not spare running
    jobs, because a test that clears the queue owns every worker there is."""
    jobs = Job.objects.using(db.alias()).all()
    if queues is not None:
        jobs = jobs.filter(queue__in=list(queues))
    deleted, _ = jobs.delete()
    return deleted
