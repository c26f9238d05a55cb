"""Writing new jobs: one, or many in one round trip.

Enqueue runs in the caller's transaction: a job enqueued inside ``atomic()`` is
rolled back with it and becomes visible to workers when it commits.

Two ways in, one INSERT. ``enqueue_job(s)`` take ``Job`` instances and validate
them here (``prepare``): the store's own API. ``insert_jobs`` takes rows as
columns (``NewJobs``), which the tasks backend builds straight from a task's
resolved options after validating every call itself, so a batch costs no model
instance per row. Both end in the engine's insert: on PostgreSQL one lean
statement that also wakes the queues' workers (``engines.postgresql_insert``),
elsewhere the ORM's insert.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from .. import limits
from ..conf import settings
from ..exceptions import InvalidDuration, InvalidJob, InvalidResources, PayloadTooLarge
from ..models import Job, JobState
from ..payloads import payload_size
from ..resources import (
    STANDARD_KEYS,
    check_custom_key_count,
    check_quantity,
    custom_keys_of,
    encode_custom_keys,
)
from ..storable import check_storable_text, locate_unstorable
from . import db
from .rows import NEW_ROW, NewJobs

NAME_MAX = limits.NAME_MAX
_NO_RESOURCES: dict[str, Any] = {**dict.fromkeys(STANDARD_KEYS, 0), "custom_keys": ""}


def resource_columns(resources: Mapping[str, int]) -> dict[str, Any]:
    """The scalar columns the claim compares, derived from a resource requirement:
    one per standard key (0 when absent) and the custom keys' delimited string."""
    if not resources:
        return dict(_NO_RESOURCES)  # most jobs: what the code below derives from {}
    columns: dict[str, Any] = {key: int(resources.get(key, 0)) for key in STANDARD_KEYS}
    columns["custom_keys"] = encode_custom_keys(custom_keys_of(resources))
    return columns


def prepare(job: Job, max_payload_bytes: int | None = None) -> Job:
    """Validate a new job and fill the columns derived from its resources.
    ``max_payload_bytes`` defaults to the setting (read once per batch by callers
    that prepare many: a settings read costs more than the check). Every bound is
    the one ``dispatch_jobs.limits`` declares, so nothing fails at INSERT."""
    cap = settings.max_payload_bytes if max_payload_bytes is None else max_payload_bytes
    if job.pk is not None:
        raise InvalidJob(f"Job {job.pk} already exists; enqueue only new jobs.")
    if not isinstance(job.name, str) or not job.name or len(job.name) > NAME_MAX:
        raise InvalidJob(f"Job name must be a non-empty string of at most {NAME_MAX} chars.")
    if not limits.is_queue_name(job.queue):
        raise InvalidJob(
            f"Queue of {job.name!r} must be a string of {limits.QUEUE_NAME_RULE}, "
            f"got {job.queue!r}."
        )
    _check_texts(job)
    for name in ("priority", "max_retries"):
        value = getattr(job, name)
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidJob(f"{name} of {job.name!r} must be an integer, got {value!r}.")
        if not limits.INT32_MIN <= value <= limits.INT32_MAX:
            raise InvalidJob(f"{name} of {job.name!r} does not fit a 32-bit column: {value}.")
    if job.max_retries < 0:
        raise InvalidJob(f"max_retries of {job.name!r} must be >= 0, got {job.max_retries}.")
    _check_times(job)
    found = locate_unstorable(job.payload, max_items=cap, root="payload", json_only=True)
    if found:
        raise InvalidJob(f"Payload of {job.name!r} cannot be stored: {found.sentence()}.")
    size = payload_size(job.name, job.payload)
    if size > cap:
        raise PayloadTooLarge(job.name, size, cap)
    derive_resource_columns(job)
    job.state = JobState.PENDING
    return job


def derive_resource_columns(job: Job) -> None:
    """Check ``job.resources`` and set the claim's scalar columns from it. Every
    write that stores ``resources`` (enqueue, ``update_job``, ``update_leased_job``)
    goes through here, so the columns the claim compares never disagree with the
    requirement they are derived from."""
    resources = job.resources or {}
    if not isinstance(resources, Mapping):
        raise InvalidJob(
            f"Resources of {job.name!r} must be a mapping of canonical amounts, "
            f"got {type(resources).__name__}."
        )
    try:
        for key, amount in resources.items():
            check_quantity(key, amount)
        check_custom_key_count(resources)
        columns = resource_columns(resources)
    except InvalidResources as exc:
        raise InvalidJob(f"Resources of {job.name!r}: {exc}") from exc
    for attname, value in columns.items():
        setattr(job, attname, value)


def _check_texts(job: Job) -> None:
    for attname in ("name", "queue", "scope_app_id", "scope_org_id", "resource_class"):
        value = getattr(job, attname)
        problem = check_storable_text(value) if isinstance(value, str) else None
        if problem:
            raise InvalidJob(f"{attname} of job {job.name!r}: {value[:40]!r} {problem}.")


def _check_times(job: Job) -> None:
    for attname in ("timeout", "lease_ttl"):
        value = getattr(job, attname)
        if value is None:
            continue
        low, high = limits.duration_bounds(attname)
        try:
            limits.to_duration(value, f"{attname} of {job.name!r}", low=low, high=high)
        except InvalidDuration as exc:
            raise InvalidJob(str(exc)) from exc
    run_at = job.run_at
    if isinstance(run_at, datetime) and not limits.is_storable_time(run_at):
        first, last = limits.RUN_AFTER_MIN.date(), limits.RUN_AFTER_MAX.date()
        raise InvalidJob(f"run_at of {job.name!r} is outside {first}..{last}: {run_at}.")


def enqueue_job(job: Job) -> Job:
    """Persist one new job in the pending state and return it with its id."""
    prepare(job)
    return _persist([job], many=False)[0]


def enqueue_jobs(jobs: Sequence[Job]) -> list[Job]:
    """Persist many new jobs in one INSERT; all are validated before any is written."""
    cap = settings.max_payload_bytes
    prepared = [prepare(job, cap) for job in jobs]
    if not prepared:
        return []
    return _persist(prepared, many=True)


def insert_jobs(new: NewJobs, returning: tuple[str, ...] = NEW_ROW) -> list[tuple[Any, ...]]:
    """Write new pending rows in one INSERT; returns the ``returning`` attnames'
    values of each row, in row order.

    The caller has validated every value: this is the tasks backend's door, and
    its checks (task options at definition, arguments at enqueue) cover
    everything ``prepare`` checks, so nothing is checked twice per row.
    """
    if not new.size:
        return []
    # Enqueue writes pending jobs, whatever the caller's columns say.
    new = NewJobs(new.size, {**new.shared, "state": JobState.PENDING}, new.own)
    return db.engine().insert(new, returning)


def _persist(jobs: list[Job], *, many: bool) -> list[Job]:
    """Write prepared ``Job`` instances and give them what the database assigned."""
    return db.engine().persist(jobs, many=many)
