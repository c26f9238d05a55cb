"""Database probes over a plain psycopg connection (for the non-Django peers)."""

from __future__ import annotations

from typing import Any

from ..databases import libpq_dsn


class PgProbe:
    """One autocommit psycopg connection, reopened after the database is dropped."""

    def __init__(self, url: str) -> None:
        self.dsn = libpq_dsn(url)
        self._conn: Any = None

    def rows(self, sql: str, params: tuple[object, ...] = ()) -> list[tuple[Any, ...]]:
        import psycopg

        if self._conn is None or self._conn.closed:
            self._conn = psycopg.connect(self.dsn, autocommit=True)
        return list(self._conn.execute(sql, params).fetchall())

    def scalar(self, sql: str, params: tuple[object, ...] = ()) -> Any:
        found = self.rows(sql, params)
        return found[0][0] if found else None

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
