"""Plain job reads and writes: get, unfenced update, delete, list, count, heartbeat."""

from __future__ import annotations

from datetime import timedelta

from django.db.models import Q, QuerySet
from django.db.models.functions import Coalesce, Now

from ..exceptions import JobNotFound, LeaseLost
from ..models import Job, JobState
from . import db
from .enqueue import derive_resource_columns
from .leases import fenced


def _jobs() -> QuerySet[Job]:
    return Job.objects.using(db.alias())


def get_job(job_id: int) -> Job:
    try:
        return _jobs().get(id=job_id)
    except (Job.DoesNotExist, ValueError, TypeError) as exc:
        raise JobNotFound(job_id) from exc


def update_job(job: Job) -> None:
    """Whole-row write with no fence. Callers that must respect a lease use
    ``update_leased_job`` instead. The claim's scalar columns (cpu, memory, disk,
    gpu, custom_keys) are recomputed from ``job.resources``, whatever the caller
    set them to; resources that are not canonical amounts raise ``InvalidJob``."""
    derive_resource_columns(job)
    values = {
        field.attname: getattr(job, field.attname)
        for field in Job._meta.concrete_fields
        if field.attname not in ("id", "updated_at")
    }
    # One statement: a row deleted meanwhile is reported, never half-written.
    # updated_at is the database's clock, not this process's.
    if not _jobs().filter(id=job.pk).update(**values, updated_at=Now()):
        raise JobNotFound(job.pk)


def delete_job(job_id: int) -> None:
    deleted, _ = _jobs().filter(id=job_id).delete()
    if not deleted:
        raise JobNotFound(job_id)


def list_jobs_by_state(
    state: str, *, limit: int = 0, offset: int = 0, queue: str = ""
) -> list[Job]:
    """Jobs in ``state`` oldest first; ``limit`` 0 means no limit."""
    qs = _jobs().filter(state=state).order_by("id")
    if queue:
        qs = qs.filter(queue=queue)
    if limit > 0:
        return list(qs[offset : offset + limit])
    return list(qs[offset:]) if offset else list(qs)


def count_jobs(*, queue: str = "", state: str = "") -> int:
    qs = _jobs()
    if queue:
        qs = qs.filter(queue=queue)
    if state:
        qs = qs.filter(state=state)
    return qs.count()


def heartbeat_job(job_id: int, worker_id: str, epoch: int) -> None:
    """The seed's ``HeartbeatJob``: touch a running job's heartbeat (database
    clock) without extending its lease. A renewal that does not extend, so it
    sits behind renewal's fence (running, held by ``worker_id``, at ``epoch``):
    a worker whose lease moved on cannot make the job look alive. Raises
    ``JobNotFound`` when the row is gone, ``LeaseLost`` when the fence fails."""
    if fenced(job_id, worker_id, epoch).update(heartbeat_at=Now()):
        return
    get_job(job_id)
    raise LeaseLost(job_id, worker_id, epoch)


def reap_stale_jobs(threshold: timedelta) -> list[Job]:
    """Running jobs silent for longer than ``threshold`` (by the database's clock):
    their worker may have crashed. Read-only; reclaim is what moves them."""
    return list(
        _jobs()
        .filter(state=JobState.RUNNING)
        .alias(_silent_since=Coalesce("heartbeat_at", "started_at", "updated_at"))
        .filter(Q(_silent_since__lt=db.now_minus(threshold)))
        .order_by("id")
    )
