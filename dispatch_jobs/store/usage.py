"""Per-attempt usage records: record, list, purge (the seed's ``UsageRecorder``)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db.models import QuerySet

from ..models import Usage
from . import db


def _usage() -> QuerySet[Usage]:
    return Usage.objects.using(db.alias())


def record_usage(usage: Usage) -> Usage:
    usage.save(using=db.alias(), force_insert=True)
    return usage


def record_usages(usages: list[Usage]) -> list[Usage]:
    """Many attempts in one INSERT (the worker batches its records)."""
    return _usage().bulk_create(usages) if usages else []


def list_usage(
    *, name: str = "", since: datetime | None = None, limit: int = 0, offset: int = 0
) -> list[Usage]:
    """Recorded attempts, most recent first. ``limit`` 0 means no limit."""
    qs = _usage().order_by("-recorded_at", "-id")
    if name:
        qs = qs.filter(name=name)
    if since is not None:
        qs = qs.filter(recorded_at__gte=since)
    if limit > 0:
        return list(qs[offset : offset + limit])
    return list(qs[offset:]) if offset else list(qs)


def usage_samples(
    name: str, low: int, high: int, limit: int
) -> list[tuple[str, int, timedelta | None, timedelta]]:
    """The newest ``limit`` attempts of task ``name`` with ``low <= input_bytes <
    high``, as (executor, peak_rss, cpu_time, wall_time): what the estimator reads.
    Served by the (name, recorded_at) index; bounded by ``limit``."""
    qs = (
        _usage()
        .filter(name=name, input_bytes__gte=low, input_bytes__lt=high)
        .order_by("-recorded_at", "-id")
        .values_list("executor", "peak_rss", "cpu_time", "wall_time")
    )
    return list(qs[: max(limit, 0)])


def purge_usage(before: datetime, limit: int) -> int:
    """Delete up to ``limit`` records older than ``before``, oldest first; returns
    how many were removed. Retention is the operator's call, hence a parameter."""
    if limit <= 0:
        return 0
    ids = list(
        _usage()
        .filter(recorded_at__lt=before)
        .order_by("recorded_at", "id")
        .values_list("id", flat=True)[:limit]
    )
    if not ids:
        return 0
    deleted, _ = _usage().filter(id__in=ids).delete()
    return deleted
