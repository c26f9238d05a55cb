"""System checks for DISPATCH_JOBS and the database it uses. One id per problem."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings as django_settings
from django.core.checks import Error, Warning, register

from .conf import DEFAULTS

_DURATIONS = (
    "DEFAULT_TIMEOUT",
    "LEASE_TTL",
    "HEARTBEAT_INTERVAL",
    "UNLEASED_RECLAIM_GRACE",
)
_POSITIVE_INTS = ("MAX_PAYLOAD_BYTES", "LIST_PAGE_SIZE")
_NON_NEGATIVE_INTS = ("DEFAULT_MAX_RETRIES",)


@register()
def check_settings(app_configs: Any = None, **kwargs: Any) -> list[Any]:
    value = getattr(django_settings, "DISPATCH_JOBS", {})
    if not isinstance(value, dict):
        return [
            Error(
                f"DISPATCH_JOBS must be a dict, got {type(value).__name__}.",
                id="dispatch_jobs.E001",
            )
        ]
    errors: list[Any] = []
    for key in sorted(set(value) - set(DEFAULTS)):
        errors.append(
            Error(
                f"DISPATCH_JOBS has an unknown key {key!r}.",
                hint=f"Known keys: {', '.join(sorted(DEFAULTS))}.",
                id="dispatch_jobs.E002",
            )
        )
    for key in _DURATIONS:
        if key in value and (
            not isinstance(value[key], timedelta) or value[key] <= timedelta(0)
        ):
            errors.append(
                Error(
                    f"DISPATCH_JOBS[{key!r}] must be a positive datetime.timedelta, "
                    f"got {value[key]!r}.",
                    id="dispatch_jobs.E003",
                )
            )
    for key in _POSITIVE_INTS + _NON_NEGATIVE_INTS:
        if key in value:
            item = value[key]
            low = 1 if key in _POSITIVE_INTS else 0
            if isinstance(item, bool) or not isinstance(item, int) or item < low:
                errors.append(
                    Error(
                        f"DISPATCH_JOBS[{key!r}] must be an integer >= {low}, got {item!r}.",
                        id="dispatch_jobs.E004",
                    )
                )
    database = value.get("DATABASE", DEFAULTS["DATABASE"])
    if database not in django_settings.DATABASES:
        errors.append(
            Error(
                f"DISPATCH_JOBS['DATABASE'] names {database!r}, which is not in DATABASES.",
                id="dispatch_jobs.E005",
            )
        )
    else:
        errors += _check_database(database)
    lease = value.get("LEASE_TTL", DEFAULTS["LEASE_TTL"])
    beat = value.get("HEARTBEAT_INTERVAL", DEFAULTS["HEARTBEAT_INTERVAL"])
    if isinstance(lease, timedelta) and isinstance(beat, timedelta) and beat >= lease:
        errors.append(
            Error(
                f"HEARTBEAT_INTERVAL ({beat}) must be shorter than LEASE_TTL ({lease}), "
                "or every lease lapses before it is renewed.",
                id="dispatch_jobs.E006",
            )
        )
    return errors


def _check_database(alias: str) -> list[Any]:
    config = django_settings.DATABASES[alias]
    engine = config.get("ENGINE", "")
    if engine.endswith("sqlite3"):
        mode = str(config.get("OPTIONS", {}).get("transaction_mode", "")).upper()
        if mode not in ("IMMEDIATE", "EXCLUSIVE"):
            return [
                Error(
                    f"DATABASES[{alias!r}] is SQLite without transaction_mode 'IMMEDIATE': "
                    "two workers could claim the same job or see 'database is locked'.",
                    hint="Set OPTIONS = {'transaction_mode': 'IMMEDIATE', 'init_command': "
                    "'PRAGMA journal_mode=WAL; PRAGMA busy_timeout=5000;'}.",
                    id="dispatch_jobs.E007",
                )
            ]
        if "journal_mode=wal" not in str(config.get("OPTIONS", {}).get("init_command", "")).lower():
            return [
                Warning(
                    f"DATABASES[{alias!r}] is SQLite without WAL: readers block the "
                    "worker's writes.",
                    hint="Add 'PRAGMA journal_mode=WAL;' to OPTIONS['init_command'].",
                    id="dispatch_jobs.W001",
                )
            ]
    return []
