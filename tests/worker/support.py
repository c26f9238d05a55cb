"""Helpers the worker suite shares."""

from __future__ import annotations

from typing import Any

from dispatch_jobs import store
from dispatch_jobs.models import Job


def enqueue(task: Any, *args: Any, kwargs: dict[str, Any] | None = None, **fields: Any) -> Job:
    """Enqueue ``task`` through the store (no tasks backend needed)."""
    return store.enqueue_job(
        Job(name=task.module_path, payload={"args": list(args), "kwargs": kwargs or {}}, **fields)
    )


def reload(job: Job) -> Job:
    return Job.objects.get(pk=job.pk)
