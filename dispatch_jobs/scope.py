"""Tenant scope (app id, org id): captured at enqueue, restored for the handler."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True)
class Scope:
    app_id: str = ""
    org_id: str = ""


_current: ContextVar[Scope] = ContextVar("dispatch_jobs_scope", default=Scope())


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
