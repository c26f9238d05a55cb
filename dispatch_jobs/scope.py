"""Tenant scope (app id, org id): captured at enqueue, restored for the handler."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True)
class Scope:
    app_id: str = ""
    org_id: str = ""


# Scope is frozen, so sharing one default instance is safe.
_current: ContextVar[Scope] = ContextVar("dispatch_jobs_scope", default=Scope())  # noqa: B039


def current_scope() -> Scope:
    return _current.get()


@contextmanager
def scope(app_id: str = "", org_id: str = "") -> Iterator[Scope]:
    """Jobs enqueued inside the block carry this scope; handlers run inside it."""
    value = Scope(app_id=str(app_id or ""), org_id=str(org_id or ""))
    token = _current.set(value)
    try:
        yield value
    finally:
        _current.reset(token)


def as_scope(value: object) -> Scope:
    """A ``Scope`` from a ``Scope``, an ``(app_id, org_id)`` pair, a mapping with
    ``app_id``/``org_id`` keys, or ``None`` (no scope). Raises ``ValueError``."""
    if value is None:
        return Scope()
    if isinstance(value, Scope):
        return value
    if isinstance(value, Mapping) and set(value) <= {"app_id", "org_id"}:
        return Scope(app_id=str(value.get("app_id") or ""), org_id=str(value.get("org_id") or ""))
    if isinstance(value, tuple | list) and len(value) == 2:
        return Scope(app_id=str(value[0] or ""), org_id=str(value[1] or ""))
    raise ValueError(
        "A scope must be a Scope, an (app_id, org_id) pair or "
        f"{{'app_id': ..., 'org_id': ...}}, got {value!r}."
    )
