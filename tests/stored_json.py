"""Rows as another program could leave them: a JSON column set by SQL to any
text, bypassing every check the app makes on the way in."""

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
