"""Writing new jobs: one, or many in one round trip.

Enqueue runs in the caller's transaction: a job enqueued inside ``atomic()`` is
rolled back with it and becomes visible to workers when it commits.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from django.db import transaction

from ..conf import settings
from ..exceptions import InvalidJob, PayloadTooLarge
from ..models import Job, JobState
from ..resources import STANDARD_KEYS, custom_keys_of, encode_custom_keys
from . import db

NAME_MAX = 255
QUEUE_MAX = 100


def payload_size(name: str, payload: object) -> int:
    """The payload's encoded size in bytes; refuses anything that is not JSON."""
    try:
        encoded = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise InvalidJob(f"Payload of {name!r} is not JSON-serialisable: {exc}") from exc
    return len(encoded.encode())


def prepare(job: Job) -> Job:
    """Validate a new job and fill the columns derived from its resources."""
    if job.pk is not None:
        raise InvalidJob(f"Job {job.pk} already exists; enqueue only new jobs.")
    if not isinstance(job.name, str) or not job.name or len(job.name) > NAME_MAX:
        raise InvalidJob(f"Job name must be a non-empty string of at most {NAME_MAX} chars.")
    if not isinstance(job.queue, str) or not job.queue or len(job.queue) > QUEUE_MAX:
        raise InvalidJob(
            f"Queue of {job.name!r} must be a non-empty string of at most {QUEUE_MAX} chars, "
            f"got {job.queue!r}."
        )
    for field in ("priority", "max_retries"):
        value = getattr(job, field)
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidJob(f"{field} of {job.name!r} must be an integer, got {value!r}.")
    if job.max_retries < 0:
        raise InvalidJob(f"max_retries of {job.name!r} must be >= 0, got {job.max_retries}.")
    size = payload_size(job.name, job.payload)
    if size > settings.max_payload_bytes:
        raise PayloadTooLarge(job.name, size, settings.max_payload_bytes)
    resources = job.resources or {}
    for key, amount in resources.items():
        if isinstance(amount, bool) or not isinstance(amount, int) or amount < 0:
            raise InvalidJob(
                f"Resource {key!r} of {job.name!r} must be a non-negative integer in "
                f"canonical units, got {amount!r}."
            )
    for key in STANDARD_KEYS:
        setattr(job, key, int(resources.get(key, 0)))
    job.custom_keys = encode_custom_keys(custom_keys_of(resources))
    job.state = JobState.PENDING
    return job


def enqueue_job(job: Job) -> Job:
    """Persist one new job in the pending state and return it with its id."""
    prepare(job)
    job.save(using=db.alias(), force_insert=True)
    _notify_enqueued([job])
    return job


def enqueue_jobs(jobs: Sequence[Job]) -> list[Job]:
    """Persist many new jobs in one INSERT; all are validated before any is written."""
    prepared = [prepare(job) for job in jobs]
    if not prepared:
        return []
    with transaction.atomic(using=db.alias()):
        created = Job.objects.using(db.alias()).bulk_create(prepared)
    _notify_enqueued(created)
    return created


def _notify_enqueued(jobs: Sequence[Job]) -> None:
    """Wake idle workers on PostgreSQL: one NOTIFY per queue, delivered at commit."""
    from .notify import notify_queues

    notify_queues(job.queue for job in jobs)
