"""Reading a claimed row defensively: a row the worker cannot make sense of is
that job's permanent failure, named by its column, never a crash of the fetch
loop and never a re-run.

Rows are written by the store from validated input, but a row can still be
changed by hand, by an older version, or by another program sharing the table;
the worker trusts nothing it did not check here.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from ..exceptions import InvalidDuration
from ..limits import LEASE_TTL_MAX, to_duration
from ..models import Job

# The longest a stored duration may be: a lease no longer than enqueue allows
# (limits.py), which a worker renews; a timeout any length (a row written by an
# older version may hold more than enqueue allows today).
_HIGHEST = {"lease_ttl": LEASE_TTL_MAX, "timeout": None}


def lease_ttl_of(job: Job, default: timedelta) -> timedelta:
    """The TTL to renew ``job``'s lease with: its own when it is sound, else the
    worker's (a row with an absurd TTL fails in the executor, never in a
    renewal it shares with other jobs)."""
    ttl = job.lease_ttl
    return default if ttl is None or _duration_problem(job, "lease_ttl") else ttl


def _duration_problem(job: Job, column: str) -> str | None:
    """Why ``column`` of ``job`` is not a stored duration in bounds; None when it is
    (or is unset)."""
    value = getattr(job, column)
    if value is None:
        return None
    try:
        to_duration(value, f"column {column!r}", high=_HIGHEST[column])
    except InvalidDuration as exc:
        return str(exc).removesuffix(".")
    return None


def problem_with(job: Job) -> str | None:
    """Why the claimed ``job`` cannot be run, naming the column; None when it can.
    Cheap enough for every claimed job: a few type checks."""
    undecodable: dict[str, str] | None = getattr(job, "undecodable", None)
    if undecodable:
        column, reason = next(iter(undecodable.items()))
        return f"column {column!r} could not be read: {reason}"
    if not isinstance(job.name, str) or not job.name:
        return "column 'name' is not a task name"
    resources = job.resources
    if resources is not None and not _is_quantities(resources):
        return (
            "column 'resources' must be an object of non-negative integers in canonical "
            f"units, got {_show(resources)}"
        )
    bindings = job.artifact_bindings
    if bindings is not None and not _is_bindings(bindings):
        return (
            "column 'artifact_bindings' must be an object of input names to artifact "
            f"references (hash, size, storage, path), got {_show(bindings)}"
        )
    if not isinstance(job.attempts, list) and job.attempts is not None:
        return f"column 'attempts' must be a list, got {_show(job.attempts)}"
    for column in ("timeout", "lease_ttl"):
        if problem := _duration_problem(job, column):
            return problem
    for column in ("retry_count", "max_retries", "lease_epoch", "evict_count"):
        if not isinstance(getattr(job, column), int):
            return f"column {column!r} must be an integer, got {_show(getattr(job, column))}"
    return None


def quantities(value: Any) -> dict[str, int]:
    """The resources of a held job for accounting, whatever the column holds: an
    undecodable value counts as nothing (its job fails before it runs)."""
    if not _is_quantities(value):
        return {}
    return value


def _is_quantities(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(key, str) and type(amount) is int and amount >= 0
        for key, amount in value.items()
    )


def _is_bindings(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(name, str)
        and isinstance(ref, dict)
        and isinstance(ref.get("hash"), str)
        and type(ref.get("size")) is int
        and isinstance(ref.get("storage"), str)
        and isinstance(ref.get("path"), str)
        for name, ref in value.items()
    )


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:77]}…"
