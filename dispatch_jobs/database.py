"""Where the app's rows live, and the database's clock.

Every module reaches the jobs database through ``alias()`` (the ``DATABASE``
setting) and compares times with the database's own clock (``now_plus``,
``now_minus`` inside queries, ``database_now()`` for a value to show or compute
with), so no worker's clock ever decides readiness or ownership.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django.db import connections, models
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Value
from django.db.models.functions import Now

from .conf import settings


def alias() -> str:
    return settings.database


def connection() -> BaseDatabaseWrapper:
    return connections[alias()]


def vendor() -> str:
    return connection().vendor


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
    that must show or compute with it; comparisons use ``Now()`` inside the query.

    The clock is Django's own ``Now()`` as each backend compiles it (on MySQL and
    MariaDB the session runs in UTC: the store's engine sets it per connection)."""
    from .models import Job

    wrapper = connection()
    sql, params = Job.objects.using(alias()).query.get_compiler(alias()).compile(Now())
    with wrapper.cursor() as cursor:
        cursor.execute(f"SELECT {sql}", params)
        raw = cursor.fetchone()[0]
    value = datetime.fromisoformat(raw) if isinstance(raw, str) else raw
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC)
