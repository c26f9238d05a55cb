"""Rows as another program could leave them: a JSON column set by SQL to any
text, a time or interval no driver reads back, bypassing every check the app
makes on the way in."""

from __future__ import annotations

from django.db import DatabaseError, connection, transaction
from django.db.models import Model


def set_json_text(model: type[Model], pk: object, column: str, text: str) -> bool:
    """``column`` of row ``pk`` of ``model`` set to the JSON ``text``; False where the
    database refuses it (MariaDB keeps no JSON over 32 levels, SQLite none over
    2,000), leaving the row as it was."""
    quote = connection.ops.quote_name
    cast = "::jsonb" if connection.vendor == "postgresql" else ""
    sql = (
        f"UPDATE {quote(model._meta.db_table)} SET {quote(column)} = %s{cast} "
        f"WHERE {quote(model._meta.pk.column)} = %s"
    )
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql, [text, pk])
    except DatabaseError:
        return False
    return True


def deepest_nesting() -> str:
    """JSON nested as deep as this database keeps (PostgreSQL: 10,000 levels;
    SQLite: 2,000), deeper than Python's decoder follows on PostgreSQL."""
    levels = 10_000 if connection.vendor == "postgresql" else 2_000
    return "[" * levels + "]" * levels


# Values a database keeps that the driver or Django cannot read back, per vendor:
# PostgreSQL's infinite times and intervals past timedelta's range, SQLite's text
# that names no day, MariaDB's zero date (read as None there).
UNREADABLE = {
    "postgresql": [
        ("created_at", "'infinity'::timestamptz"),
        ("run_at", "'-infinity'::timestamptz"),  # ready, as far as the claim sees
        ("timeout", "'100000000 years'::interval"),
    ],
    # A time of the right form with no such day: Django's parser raises (text of
    # no time's form it reads as None, and the job runs).
    "sqlite": [("created_at", "'2026-13-45 00:00:00'"), ("run_at", "'0000-13-45 00:00:00'")],
    "mysql": [("created_at", "'0000-00-00 00:00:00'")],
}
