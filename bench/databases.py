"""Where each system's benchmark database lives, and how it is made fresh.

Every system gets its own database named ``bench_<system>`` (PostgreSQL and
MariaDB) or its own file under ``/tmp/bench/`` (SQLite), dropped and created
again before every measured run, so no run sees another's rows, bloat or
statistics. Server addresses can be overridden with ``BENCH_PG_URL`` and
``BENCH_MYSQL_URL`` (a server URL without a database name).
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

PG_SERVER = os.environ.get("BENCH_PG_URL", "postgres://postgres@127.0.0.1:5432")
MYSQL_SERVER = os.environ.get("BENCH_MYSQL_URL", "mysql://root@127.0.0.1:3306")
SQLITE_DIR = Path(os.environ.get("BENCH_SQLITE_DIR", "/tmp/bench"))


# BENCH_DB_PREFIX keeps two people's runs on one server apart (default "bench_").
DB_PREFIX = os.environ.get("BENCH_DB_PREFIX", "bench_")


def database_name(system: str) -> str:
    return f"{DB_PREFIX}{system}"


def database_url(vendor: str, system: str) -> str:
    """The URL of ``system``'s benchmark database on ``vendor``."""
    name = database_name(system)
    if vendor == "postgres":
        return f"{PG_SERVER.rstrip('/')}/{name}"
    if vendor == "mysql":
        return f"{MYSQL_SERVER.rstrip('/')}/{name}"
    if vendor == "sqlite":
        return f"sqlite:///{SQLITE_DIR / (name + '.sqlite3')}"
    raise ValueError(f"unknown database vendor {vendor!r}")


def libpq_dsn(url: str) -> str:
    """A postgres:// URL in the form psycopg, asyncpg and the peers' CLIs accept."""
    return url.replace("postgres://", "postgresql://", 1)


def fresh_database(url: str) -> None:
    """Drop and create the database ``url`` names (for SQLite: delete the file)."""
    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    if parts.scheme.startswith("postgres"):
        import psycopg

        server = libpq_dsn(url).rsplit("/", 1)[0] + "/postgres"
        with psycopg.connect(server, autocommit=True) as conn:
            # FORCE ends sessions a killed worker may have left behind.
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}"')
    elif parts.scheme == "mysql":
        conn = _mysql(url)
        try:
            cur = conn.cursor()
            cur.execute(f"DROP DATABASE IF EXISTS `{name}`")
            cur.execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4")
        finally:
            conn.close()
    elif parts.scheme == "sqlite":
        path = Path(parts.path)
        path.parent.mkdir(parents=True, exist_ok=True)
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        sqlite3.connect(path).close()
    else:
        raise ValueError(f"unsupported database URL {url!r}")


def server_version(vendor: str) -> str:
    """The server's version string, for the results' machine section."""
    if vendor == "postgres":
        import psycopg

        with psycopg.connect(libpq_dsn(PG_SERVER) + "/postgres") as conn:
            row = conn.execute("SHOW server_version").fetchone()
            return f"PostgreSQL {row[0]}" if row else "PostgreSQL"
    if vendor == "mysql":
        import MySQLdb

        parts = urlsplit(MYSQL_SERVER)
        conn = MySQLdb.connect(
            host=parts.hostname or "127.0.0.1", port=parts.port or 3306, user="root"
        )
        try:
            cur = conn.cursor()
            cur.execute("SELECT VERSION()")
            return f"MariaDB/MySQL {cur.fetchone()[0]}"
        finally:
            conn.close()
    return f"SQLite {sqlite3.sqlite_version}"


# BENCH_FILL_ANALYZE=0: a drain starts on tables without planner statistics (a
# burst enqueued and drained before autovacuum's first look, which comes within
# a minute on a live server). The default brings them up to date first, as a
# server that has been running has them: a queue whose plan needs statistics is
# then measured at its steady rate, not at the plan a fresh table gets.
FILL_ANALYZE = os.environ.get("BENCH_FILL_ANALYZE", "1") != "0"


def analyze(url: str) -> None:
    """Bring the planner's statistics of every table in ``url``'s database up to
    date (PostgreSQL ``ANALYZE``, MariaDB ``ANALYZE TABLE``, SQLite ``ANALYZE``)."""
    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    if parts.scheme.startswith("postgres"):
        import psycopg

        with psycopg.connect(libpq_dsn(url), autocommit=True) as conn:
            conn.execute("ANALYZE")
    elif parts.scheme == "mysql":
        conn = _mysql(url, name)
        try:
            cur = conn.cursor()
            cur.execute("SHOW TABLES")
            tables = [row[0] for row in cur.fetchall()]
            if tables:
                cur.execute("ANALYZE TABLE " + ", ".join(f"`{t}`" for t in tables))
                cur.fetchall()
        finally:
            conn.close()
    elif parts.scheme == "sqlite":
        with sqlite3.connect(parts.path) as conn:
            conn.execute("ANALYZE")
    else:
        raise ValueError(f"unsupported database URL {url!r}")


def _mysql(url: str, database: str = "") -> Any:
    """A MySQLdb connection to ``url``'s server (and ``database``, when given)."""
    import MySQLdb

    parts = urlsplit(url)
    options = {"db": database} if database else {}
    return MySQLdb.connect(
        host=parts.hostname or "127.0.0.1",
        port=parts.port or 3306,
        user=parts.username or "root",
        passwd=parts.password or "",
        **options,
    )
