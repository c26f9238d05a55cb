"""Where the store's rows live, and the database-clock expressions it compares with."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import connections, models
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.signals import connection_created
from django.db.models import Value
from django.db.models.functions import Now

from ..conf import settings


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


_NOW_SQL = {
    "postgresql": "SELECT statement_timestamp()",
    "mysql": "SELECT UTC_TIMESTAMP(6)",
    "sqlite": "SELECT strftime('%Y-%m-%d %H:%M:%f', 'now')",
}


def database_now() -> datetime:
    """Read the database's clock (one query), as an aware UTC datetime. For callers
    that must show or compute with it; comparisons use ``Now()`` inside the query."""
    with connections[alias()].cursor() as cursor:
        cursor.execute(_NOW_SQL.get(vendor(), "SELECT CURRENT_TIMESTAMP"))
        raw = cursor.fetchone()[0]
    value = datetime.fromisoformat(raw) if isinstance(raw, str) else raw
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def use_utc_session(sender: Any, connection: BaseDatabaseWrapper, **kwargs: Any) -> None:
    """Run MySQL/MariaDB sessions of the jobs database in UTC.

    Django stores aware datetimes there as naive UTC, but ``NOW()`` and
    ``CURRENT_TIMESTAMP`` (``Now()``, the models' ``db_default``) answer in the
    session's time zone, which defaults to the server's. On a server not running
    in UTC every readiness and expiry comparison would be off by the offset: a
    job due now would wait hours, or a live lease look expired. Skipped when the
    database's TIME_ZONE setting makes Django store local times instead.
    """
    if connection.vendor != "mysql" or connection.alias != settings.database:
        return
    if connection.timezone_name != "UTC":
        return
    with connection.cursor() as cursor:
        cursor.execute("SET time_zone = '+00:00'")


connection_created.connect(use_utc_session, dispatch_uid="dispatch_jobs.store.db.utc")
