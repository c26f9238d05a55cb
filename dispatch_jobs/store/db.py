"""Where the store's rows live, and the database-clock expressions it compares with."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django.db import connections, models
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
