"""The worker registry: register, heartbeat, drain, deregister, remove stale."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta

from django.db.models import QuerySet
from django.db.models.functions import Now

from ..models import Worker, WorkerState
from . import db


def _workers() -> QuerySet[Worker]:
    return Worker.objects.using(db.alias())


def register_worker(
    worker_id: str,
    *,
    hostname: str,
    pid: int,
    queues: Sequence[str],
    concurrency: int,
    capacity: Mapping[str, int] | None = None,
    execution: str = "in-process",
) -> Worker:
    worker, _ = _workers().update_or_create(
        id=worker_id,
        defaults=dict(
            hostname=hostname,
            pid=pid,
            queues=list(queues),
            concurrency=concurrency,
            capacity=dict(capacity or {}),
            execution=execution,
            state=WorkerState.ACTIVE,
            last_seen_at=Now(),
        ),
    )
    return worker


# A claim error is a driver's message: bounded, and made storable (no NUL, no
# lone surrogate) so that reporting it can never be what fails.
CLAIM_ERROR_MAX = 1000


def touch_worker(
    worker_id: str, *, claim_error: str | None = None, failing_for: timedelta | None = None
) -> bool:
    """Record that the worker is alive, and whether its claims are failing:
    ``claim_error`` (the last failure) and ``failing_for`` (since when, measured
    by the worker, stored by the database's clock), or None for healthy. False
    when the row is gone (it was removed as stale), so the caller can register
    again."""
    error = None if claim_error is None else _storable(claim_error)
    since = None if error is None else db.now_minus(failing_for or timedelta(0))
    return bool(
        _workers()
        .filter(id=worker_id)
        .update(last_seen_at=Now(), claim_error=error, claim_error_since=since)
    )


def _storable(text: str) -> str:
    text = text.replace("\x00", "")[:CLAIM_ERROR_MAX]
    return text.encode("utf-8", "replace").decode("utf-8") or "(no message)"


def set_worker_state(worker_id: str, state: str) -> None:
    _workers().filter(id=worker_id).update(state=state, last_seen_at=Now())


def deregister_worker(worker_id: str) -> None:
    _workers().filter(id=worker_id).delete()


def remove_stale_workers(silent_for: timedelta) -> int:
    deleted, _ = _workers().filter(last_seen_at__lt=db.now_minus(silent_for)).delete()
    return deleted


def live_workers(silent_for: timedelta) -> list[Worker]:
    return list(_workers().filter(last_seen_at__gte=db.now_minus(silent_for)))
