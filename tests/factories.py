"""factory-boy factories for the job engine's rows.

Every factory writes through ``dispatch_jobs.store`` (the one write seam), so a
factory-made job is exactly what ``enqueue_job`` would have stored. Columns the
store owns after enqueue (state, lease columns, timestamps of a run) can still be
given: they are applied after the enqueue with one UPDATE, which is how tests put
a row into "running under worker w at epoch 3" without replaying a worker.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import factory
from django.db.models import Model

from dispatch_jobs import store
from dispatch_jobs.models import Job, JobState, Usage, Worker

# Columns enqueue normalises or never writes; set afterwards, straight on the row.
_AFTER_ENQUEUE = frozenset(
    {
        "state",
        "worker_id",
        "lease_epoch",
        "lease_expires_at",
        "heartbeat_at",
        "started_at",
        "completed_at",
        "evict_count",
        "retry_count",
        "created_at",
        "updated_at",
    }
)


class StoreFactory[M: Model](factory.django.DjangoModelFactory[M]):
    """A model factory whose ``create()`` and ``build()`` are typed as the model
    (factory-boy's ``Factory`` leaves them untyped)."""

    class Meta:
        abstract = True

    @classmethod
    def create(cls, **kwargs: Any) -> M:
        return super().create(**kwargs)

    @classmethod
    def build(cls, **kwargs: Any) -> M:
        return super().build(**kwargs)


class JobFactory(StoreFactory[Job]):
    """A pending job in queue ``default``; pass ``state=...`` etc. for other rows."""

    class Meta:
        model = Job

    name = factory.Sequence(lambda n: f"tests.jobs.tasks.job_{n}")
    queue = "default"
    payload = factory.LazyFunction(lambda: {"args": [], "kwargs": {}})
    priority = 0

    @classmethod
    def _create(cls, model_class: type[Job], *args: Any, **kwargs: Any) -> Job:
        after = {key: kwargs.pop(key) for key in list(kwargs) if key in _AFTER_ENQUEUE}
        job = store.enqueue_job(model_class(**kwargs))
        if after:
            Job.objects.filter(pk=job.pk).update(**after)
        job.refresh_from_db()
        return job

    @classmethod
    def create_batch_enqueued(cls, size: int, **kwargs: Any) -> list[Job]:
        """Many pending jobs in one ``enqueue_jobs`` call (one INSERT)."""
        return store.enqueue_jobs([cls.build(**kwargs) for _ in range(size)])


def running(worker_id: str = "w1", epoch: int = 1, **extra: Any) -> dict[str, Any]:
    """Keyword arguments for ``JobFactory`` making a row held under a lease. Give
    ``lease_expires_at`` explicitly (relative to the database's clock)."""
    return {"state": JobState.RUNNING, "worker_id": worker_id, "lease_epoch": epoch, **extra}


class UsageFactory(StoreFactory[Usage]):
    """One recorded attempt, written through ``store.record_usage``."""

    class Meta:
        model = Usage

    job_id = factory.Sequence(lambda n: n + 1)
    name = "tests.jobs.tasks.noop"
    queue = "default"
    attempt = 1
    status = JobState.COMPLETED
    wall_time = timedelta(seconds=1)

    @classmethod
    def _create(cls, model_class: type[Usage], *args: Any, **kwargs: Any) -> Usage:
        recorded_at = kwargs.pop("recorded_at", None)
        usage = store.record_usage(model_class(**kwargs))
        if recorded_at is not None:
            Usage.objects.filter(pk=usage.pk).update(recorded_at=recorded_at)
        usage.refresh_from_db()
        return usage


class WorkerFactory(StoreFactory[Worker]):
    """A registered worker, written through ``store.register_worker``."""

    class Meta:
        model = Worker

    id = factory.Sequence(lambda n: f"host-{n}:{1000 + n}")
    hostname = factory.Sequence(lambda n: f"host-{n}")
    pid = factory.Sequence(lambda n: 1000 + n)
    queues = factory.LazyFunction(lambda: ["default"])
    concurrency = 4

    @classmethod
    def _create(cls, model_class: type[Worker], *args: Any, **kwargs: Any) -> Worker:
        worker_id = kwargs.pop("id")
        last_seen_at = kwargs.pop("last_seen_at", None)
        kwargs.pop("state", None)
        store.register_worker(worker_id, **kwargs)
        if last_seen_at is not None:
            Worker.objects.filter(pk=worker_id).update(last_seen_at=last_seen_at)
        return Worker.objects.get(pk=worker_id)
