"""Where the store's rows live, and the database-clock expressions it compares with."""

from __future__ import annotations

from contextlib import AbstractContextManager
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import connections, models
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.signals import connection_created
from django.db.models import Value
from django.db.models.functions import Now

from ..conf import settings
from .engines import Engine, engine_for


def alias() -> str:
    return settings.database


def vendor() -> str:
    return connections[alias()].vendor


def now_plus(delta: timedelta) -> models.Expression:
    """The database's now + delta, so worker clocks never decide ownership."""
    return models.ExpressionWrapper(
        Now() + Value(delta, output_field=models.DurationField()),
        output_field=models.DateTimeField(),
    )


def now_minus(delta: timedelta) -> models.Expression:
    return models.ExpressionWrapper(
        Now() - Value(delta, output_field=models.DurationField()),
        output_field=models.DateTimeField(),
    )


def database_now() -> datetime:
    """Read the database's clock (one query), as an aware UTC datetime. For callers
    that must show or compute with it; comparisons use ``Now()`` inside the query."""
    with connections[alias()].cursor() as cursor:
        cursor.execute(engine().now_sql())
        raw = cursor.fetchone()[0]
    value = datetime.fromisoformat(raw) if isinstance(raw, str) else raw
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


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
