"""The store's view of the jobs database: its engine, the statement timeout, and
which refusals are about the values. Where the rows live and the database's clock
are ``dispatch_jobs.database``'s (re-exported here for the store's modules)."""

from __future__ import annotations

from contextlib import AbstractContextManager
from datetime import timedelta
from typing import Any

from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.signals import connection_created

from ..conf import settings
from ..database import alias, database_now, now_minus, now_plus, vendor
from .engines import Engine, engine_for

__all__ = [
    "alias",
    "database_now",
    "engine",
    "now_minus",
    "now_plus",
    "refused_by_content",
    "statement_timeout",
    "vendor",
]


def engine() -> Engine:
    """The engine of the jobs database: where its database-specific statements live."""
    return engine_for(alias())


def _connected(sender: Any, connection: BaseDatabaseWrapper, **kwargs: Any) -> None:
    """Each new connection of the jobs database set up by its engine (MySQL's
    sessions in UTC, say)."""
    if connection.alias == settings.database:
        engine_for(connection.alias).connected(connection)


connection_created.connect(_connected, dispatch_uid="dispatch_jobs.store.db.connected")


def refused_by_content(exc: BaseException) -> bool:
    """True when the database (or its driver) refused a statement because of the
    values it carries: retrying the same values cannot help, but the same rows
    written apart, or other values, can. Anything else (a dropped connection, a
    lock timeout, a deadlock) says nothing about the values."""
    return engine().refuses_content(exc)


def statement_timeout(timeout: timedelta) -> AbstractContextManager[None]:
    """Run the block's queries under ``timeout`` (PostgreSQL; elsewhere as they
    are), never leaking onto the connection's later queries."""
    return engine().statement_timeout(timeout)
