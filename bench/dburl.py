"""A database URL (postgres://, mysql://, sqlite:////path) as Django's DATABASES entry,
shared by the bench's Django project and the hot-path micro-benchmark."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

_ENGINES = {
    "postgres": "django.db.backends.postgresql",
    "postgresql": "django.db.backends.postgresql",
    "mysql": "django.db.backends.mysql",
}


def database_settings(url: str) -> dict[str, Any]:
    parts = urlsplit(url)
    if parts.scheme == "sqlite":
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": parts.path,
            # The same options the example project and the suite use.
            "OPTIONS": {
                "transaction_mode": "IMMEDIATE",
                "timeout": 20,
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
        }
    database: dict[str, Any] = {
        "ENGINE": _ENGINES[parts.scheme],
        "NAME": parts.path.lstrip("/"),
        "USER": parts.username or "",
        "PASSWORD": parts.password or "",
        "HOST": parts.hostname or "",
        "PORT": str(parts.port or ""),
    }
    if parts.scheme == "mysql":
        database["OPTIONS"] = {"charset": "utf8mb4"}
    return database
