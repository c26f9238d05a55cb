"""Where the store's rows live, and the database-clock expressions it compares with."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import DataError, IntegrityError, OperationalError, connections, models, transaction
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


# MySQL/MariaDB error codes that refuse a statement for what it carries, though
# the driver raises some as OperationalError: incorrect string value, data too
# long, out of range, incorrect datetime, datetime or integer overflow, truncated,
# invalid JSON, NULL in a NOT NULL column, a failed CHECK constraint, a packet over
# max_allowed_packet.
_MYSQL_REFUSALS = frozenset({1048, 1153, 1264, 1265, 1292, 1366, 1406, 1441, 1916, 3140, 4025})


def refused_by_content(exc: BaseException) -> bool:
    """True when the database (or its driver) refused a statement because of the
    values it carries: retrying the same values cannot help, but the same rows
    written apart, or other values, can. Anything else (a dropped connection, a
    lock timeout, a deadlock) says nothing about the values."""
    if isinstance(exc, (DataError, IntegrityError, UnicodeError, ValueError, TypeError)):
        return True
    code = exc.args[0] if exc.args else None
    return isinstance(exc, OperationalError) and code in _MYSQL_REFUSALS


@contextmanager
def statement_timeout(timeout: timedelta) -> Iterator[None]:
    """Run the block's queries under ``timeout`` (PostgreSQL; elsewhere as they are).

    Set with ``set_config(..., is_local => true)`` inside a transaction, so it
    ends with that transaction and never leaks onto the connection's later
    queries (a worker or another request sharing it)."""
    connection = connections[alias()]
    if connection.vendor != "postgresql":
        yield
        return
    milliseconds = max(1, int(timeout.total_seconds() * 1000))
    with transaction.atomic(using=connection.alias):
        with connection.cursor() as cursor:
            cursor.execute("SELECT set_config('statement_timeout', %s, true)", [str(milliseconds)])
        yield
