"""Tenant scope (app id, org id): captured at enqueue, restored for the handler."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import ContextDecorator
from contextvars import ContextVar, Token
from dataclasses import dataclass


@dataclass(frozen=True)
class Scope:
    app_id: str = ""
    org_id: str = ""


# Scope is frozen, so sharing one default instance is safe.
_current: ContextVar[Scope] = ContextVar("dispatch_jobs_scope", default=Scope())  # noqa: B039


def current_scope() -> Scope:
    return _current.get()


class scope(ContextDecorator):  # noqa: N801 - used as a function: with scope(...)
    """Jobs enqueued inside the block carry this scope; handlers run inside it.
    ``with scope("app", "org") as chosen:`` (or as a decorator). A class rather
    than a generator: a worker enters one per job."""

    def __init__(self, app_id: str = "", org_id: str = "") -> None:
        self.value = Scope(app_id=str(app_id or ""), org_id=str(org_id or ""))
        self._token: Token[Scope] | None = None

    def __enter__(self) -> Scope:
        self._token = _current.set(self.value)
        return self.value

    def __exit__(self, *exc_info: object) -> None:
        if self._token is not None:
            _current.reset(self._token)
            self._token = None

    def _recreate_cm(self) -> scope:
        # As a decorator, each call of the function enters a block of its own.
        return scope(self.value.app_id, self.value.org_id)


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
