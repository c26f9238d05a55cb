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
        if key in value and (not isinstance(value[key], timedelta) or value[key] <= timedelta(0)):
            errors.append(
                Error(
                    f"DISPATCH_JOBS[{key!r}] must be a positive datetime.timedelta, "
                    f"got {value[key]!r}.",
                    id="dispatch_jobs.E003",
                )
            )
    for key in _POSITIVE_INTS + _NON_NEGATIVE_INTS:
        if key in value:
            low = 1 if key in _POSITIVE_INTS else 0
            errors += _check_integer(key, value[key], low, "dispatch_jobs.E004")
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
    # An error, not a warning: a lease that lapses before its renewal is reclaimed
    # while the job still runs, and a second worker runs it again.
    if isinstance(lease, timedelta) and isinstance(beat, timedelta) and beat >= lease:
        errors.append(
            Error(
                f"HEARTBEAT_INTERVAL ({beat}) must be shorter than LEASE_TTL ({lease}), "
                "or every lease lapses before it is renewed.",
                id="dispatch_jobs.E006",
            )
        )
    return errors


def _check_integer(key: str, item: object, low: int, check_id: str) -> list[Any]:
    """An integer setting of at least ``low`` (``True`` and ``False`` are not integers here)."""
    if isinstance(item, bool) or not isinstance(item, int) or item < low:
        return [
            Error(
                f"DISPATCH_JOBS[{key!r}] must be an integer >= {low}, got {item!r}.",
                id=check_id,
            )
        ]
    return []


# What docs/install.md ("SQLite") recommends, word for word: the warnings' hints
# are built from this dict and tests/test_checks.py holds the docs to it.
SQLITE_OPTIONS: dict[str, Any] = {
    "transaction_mode": "IMMEDIATE",
    "timeout": 20,
    "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
}
SQLITE_DOCS = 'docs/install.md, "SQLite"'


def _check_database(alias: str) -> list[Any]:
    """Warnings, not errors: nothing here endangers data, so nothing may block
    ``migrate`` on Django's default SQLite settings.

    Without IMMEDIATE, SQLite still serialises writers and refuses a transaction
    that would write from a stale read (SQLITE_BUSY), so no job is claimed twice
    and no fenced write lands late; the cost is availability: a transaction that
    reads before it writes cannot wait for the lock and fails at once with
    "database is locked". The worker retries its own statements when that happens;
    a handler's own transaction fails its attempt, which is retried. Without WAL,
    readers (the admin) and the writer wait for each other.
    """
    config = django_settings.DATABASES[alias]
    if not str(config.get("ENGINE", "")).endswith("sqlite3"):
        return []
    options = config.get("OPTIONS", {}) or {}
    mode = str(options.get("transaction_mode", "")).upper()
    if mode not in ("IMMEDIATE", "EXCLUSIVE"):
        return [
            Warning(
                f"DATABASES[{alias!r}] is SQLite without transaction_mode 'IMMEDIATE': "
                "workers and the admin may fail with 'database is locked' under load.",
                hint=f"Set DATABASES[{alias!r}]['OPTIONS'] = {SQLITE_OPTIONS!r} ({SQLITE_DOCS}).",
                id="dispatch_jobs.W002",
            )
        ]
    if "journal_mode=wal" not in str(options.get("init_command", "")).lower():
        return [
            Warning(
                f"DATABASES[{alias!r}] is SQLite without WAL: readers block the worker's writes.",
                hint=f"Add {SQLITE_OPTIONS['init_command']!r} to "
                f"DATABASES[{alias!r}]['OPTIONS']['init_command'] ({SQLITE_DOCS}).",
                id="dispatch_jobs.W001",
            )
        ]
    return []


# --- The admin's settings (docs/admin.md). Ids from E050 keep clear of other parts.
_ADMIN_POSITIVE_INTS = ("ADMIN_COUNT_THRESHOLD", "ADMIN_BULK_CAP", "ADMIN_SCAN_CAP")


@register()
def check_admin_settings(app_configs: Any = None, **kwargs: Any) -> list[Any]:
    value = getattr(django_settings, "DISPATCH_JOBS", {})
    if not isinstance(value, dict):
        return []  # E001 already says so
    errors: list[Any] = []
    timeout = value.get("ADMIN_STATEMENT_TIMEOUT", DEFAULTS["ADMIN_STATEMENT_TIMEOUT"])
    if not isinstance(timeout, timedelta) or timeout < timedelta(milliseconds=1):
        errors.append(
            Error(
                "DISPATCH_JOBS['ADMIN_STATEMENT_TIMEOUT'] must be a datetime.timedelta of "
                f"at least 1 ms, got {timeout!r}.",
                id="dispatch_jobs.E050",
            )
        )
    for key in _ADMIN_POSITIVE_INTS:
        errors += _check_integer(key, value.get(key, DEFAULTS[key]), 1, "dispatch_jobs.E051")
    errors += _check_callable_path(
        "REDACT", value, "(value, *, job, field) -> value", "dispatch_jobs.E052"
    )
    return errors


def _check_callable_path(
    key: str, value: dict[str, Any], signature: str, check_id: str
) -> list[Any]:
    """A setting that names a callable by dotted path; unset ("" or None) is fine.

    The path is imported now, so a wrong one fails ``manage.py check`` rather than
    the first job or request that needs it.
    """
    path = value.get(key, DEFAULTS[key])
    if path in ("", None):
        return []
    from django.utils.module_loading import import_string

    try:
        func = import_string(path) if isinstance(path, str) else None
    except ImportError as exc:
        func, reason = None, f"it cannot be imported ({exc})"
    else:
        reason = "it is not callable" if isinstance(path, str) else "it is not a dotted path"
    if callable(func):
        return []
    return [
        Error(
            f"DISPATCH_JOBS[{key!r}] = {path!r} must name a callable {signature}, but {reason}.",
            id=check_id,
        )
    ]


# --- The tasks backend's settings (docs/tasks.md). Ids from E100 keep clear of
# other parts; DispatchBackend.check() uses E101 and E102.
@register()
def check_tasks_settings(app_configs: Any = None, **kwargs: Any) -> list[Any]:
    value = getattr(django_settings, "DISPATCH_JOBS", {})
    if not isinstance(value, dict):
        return []  # E001 already says so
    return _check_callable_path(
        "SCOPE_FROM_REQUEST",
        value,
        "(request) -> Scope | (app_id, org_id) | None",
        "dispatch_jobs.E103",
    )


# --- The runjobs worker's settings (docs/worker.md). Ids E030-E039 and W030.
_WORKER_DURATIONS = (
    "POLL_INTERVAL",
    "MAX_POLL_INTERVAL",
    "RETRY_BACKOFF_BASE",
    "RETRY_BACKOFF_CAP",
    "RECLAIM_INTERVAL",
    "PURGE_INTERVAL",
    "COMPLETED_RETENTION",
    "FAILED_RETENTION",
    "USAGE_PURGE_INTERVAL",
    "USAGE_RETENTION",
    "WORKER_STALE_AFTER",
    "SUMMARY_INTERVAL",
)
_WORKER_FLAGS = ("RECLAIM_ENABLED", "PURGE_ENABLED", "USAGE_PURGE_ENABLED", "NOTIFY")


@register()
def check_worker_settings(app_configs: Any = None, **kwargs: Any) -> list[Any]:
    value = getattr(django_settings, "DISPATCH_JOBS", {})
    if not isinstance(value, dict):
        return []  # E001 already says so

    def get(key: str) -> Any:
        return value.get(key, DEFAULTS[key])

    errors: list[Any] = []
    for key in _WORKER_DURATIONS + ("SHUTDOWN_GRACE",):
        item = get(key)
        low_ok = key == "SHUTDOWN_GRACE"  # zero grace: hand back at once
        if (
            not isinstance(item, timedelta)
            or item < timedelta(0)
            or (item == timedelta(0) and not low_ok)
        ):
            errors.append(
                Error(
                    f"DISPATCH_JOBS[{key!r}] must be a "
                    f"{'non-negative' if low_ok else 'positive'} datetime.timedelta, "
                    f"got {item!r}.",
                    id="dispatch_jobs.E030",
                )
            )
    for key, low in (("WORKER_CONCURRENCY", 1), ("MAX_EVICTIONS", 0), ("WORKER_PREFETCH", 0)):
        item = get(key)
        if isinstance(item, bool) or not isinstance(item, int) or item < low:
            errors.append(
                Error(
                    f"DISPATCH_JOBS[{key!r}] must be an integer >= {low}, got {item!r}.",
                    id="dispatch_jobs.E031",
                )
            )
    queues = get("WORKER_QUEUES")
    if queues is not None and (
        not isinstance(queues, list | tuple)
        or not queues
        or not all(isinstance(q, str) and 0 < len(q) <= 100 for q in queues)
    ):
        errors.append(
            Error(
                "DISPATCH_JOBS['WORKER_QUEUES'] must be None (the queues TASKS names) or a "
                f"non-empty list of queue names (1 to 100 characters), got {queues!r}.",
                id="dispatch_jobs.E032",
            )
        )
    for key in _WORKER_FLAGS:
        if not isinstance(get(key), bool):
            errors.append(
                Error(
                    f"DISPATCH_JOBS[{key!r}] must be True or False, got {get(key)!r}.",
                    id="dispatch_jobs.E033",
                )
            )
    for shorter, longer in (
        ("POLL_INTERVAL", "MAX_POLL_INTERVAL"),
        ("RETRY_BACKOFF_BASE", "RETRY_BACKOFF_CAP"),
    ):
        a, b = get(shorter), get(longer)
        if isinstance(a, timedelta) and isinstance(b, timedelta) and b < a:
            errors.append(
                Error(
                    f"DISPATCH_JOBS[{longer!r}] ({b}) must not be shorter than {shorter!r} ({a}).",
                    id="dispatch_jobs.E034",
                )
            )
    stale, beat = get("WORKER_STALE_AFTER"), get("HEARTBEAT_INTERVAL")
    if isinstance(stale, timedelta) and isinstance(beat, timedelta) and stale < 3 * beat:
        errors.append(
            Warning(
                f"WORKER_STALE_AFTER ({stale}) is under three HEARTBEAT_INTERVALs ({beat}): "
                "live workers may be removed from the registry between two heartbeats.",
                id="dispatch_jobs.W030",
            )
        )
    return errors


# --- The worker's LISTEN connection (docs/deployment.md, "PgBouncer"). Ids E070-E079
# and W070-W079.
@register()
def check_listen_settings(app_configs: Any = None, **kwargs: Any) -> list[Any]:
    value = getattr(django_settings, "DISPATCH_JOBS", {})
    if not isinstance(value, dict):
        return []  # E001 already says so
    listen = value.get("LISTEN_DATABASE", DEFAULTS["LISTEN_DATABASE"])
    jobs = value.get("DATABASE", DEFAULTS["DATABASE"])
    if listen in ("", None):
        # Listening over the jobs database's own connection: fine unless that
        # connection is a transaction-mode pooler.
        return _check_pooled(jobs, value, listen_set=False)
    if not isinstance(listen, str):
        return [
            Error(
                "DISPATCH_JOBS['LISTEN_DATABASE'] must be the name of a DATABASES alias "
                f"(or '' to listen over DATABASE), got {listen!r}.",
                id="dispatch_jobs.E070",
            )
        ]
    databases = django_settings.DATABASES
    if listen not in databases:
        return [
            Error(
                f"DISPATCH_JOBS['LISTEN_DATABASE'] names {listen!r}, which is not in DATABASES.",
                hint="Add a DATABASES entry with a direct (unpooled) connection to the jobs "
                "database, with 'TEST': {'MIRROR': '" + str(jobs) + "'}.",
                id="dispatch_jobs.E071",
            )
        ]
    if not databases[listen].get("ENGINE", "").endswith("postgresql"):
        return [
            Error(
                f"DISPATCH_JOBS['LISTEN_DATABASE'] names {listen!r}, which is not a PostgreSQL "
                "database: only PostgreSQL has LISTEN/NOTIFY.",
                id="dispatch_jobs.E072",
            )
        ]
    errors = _check_pooled(listen, value, listen_set=True)
    jobs_name = databases.get(jobs, {}).get("NAME")
    if jobs_name != databases[listen].get("NAME"):
        # NOTIFY is delivered within one database: listening on another hears nothing.
        errors.append(
            Warning(
                f"DATABASES[{listen!r}] (LISTEN_DATABASE) names database "
                f"{databases[listen].get('NAME')!r}, but the jobs database {jobs!r} names "
                f"{jobs_name!r}: notifications reach listeners of the same database only.",
                hint="Point LISTEN_DATABASE at the jobs database itself. Silence this "
                "warning if your pooler maps a different name onto the same database.",
                id="dispatch_jobs.W071",
            )
        )
    return errors


def _check_pooled(alias: str, value: dict[str, Any], *, listen_set: bool) -> list[Any]:
    """W070: the LISTEN connection looks like a transaction-mode pooler.

    Django's documented setting for such poolers, DISABLE_SERVER_SIDE_CURSORS, is
    the one sign a settings file gives of them.
    """
    config = django_settings.DATABASES.get(alias, {})
    if (
        not value.get("NOTIFY", DEFAULTS["NOTIFY"])
        or not config.get("ENGINE", "").endswith("postgresql")
        or not config.get("DISABLE_SERVER_SIDE_CURSORS")
    ):
        return []
    which = "LISTEN_DATABASE" if listen_set else "DATABASE (LISTEN_DATABASE is unset)"
    return [
        Warning(
            f"The worker LISTENs over DATABASES[{alias!r}] ({which}), which sets "
            "DISABLE_SERVER_SIDE_CURSORS, as for a transaction-mode pooler such as "
            "PgBouncer: LISTEN through one hears no notifications, and idle workers "
            "wake only by polling.",
            hint="Set DISPATCH_JOBS['LISTEN_DATABASE'] to an alias with a direct "
            "connection to the same database, or NOTIFY = False to poll only.",
            id="dispatch_jobs.W070",
        )
    ]


# A token shorter than this is guessable by a scraper that tries.
METRICS_TOKEN_MIN = 16


@register()
def check_metrics_settings(app_configs: Any = None, **kwargs: Any) -> list[Any]:
    value = getattr(django_settings, "DISPATCH_JOBS", {})
    if not isinstance(value, dict):
        return []  # E001 already says so
    errors: list[Any] = []
    token = value.get("METRICS_TOKEN", DEFAULTS["METRICS_TOKEN"])
    if not isinstance(token, str) or (token and len(token) < METRICS_TOKEN_MIN):
        errors.append(
            Error(
                f"DISPATCH_JOBS['METRICS_TOKEN'] must be a string of at least "
                f'{METRICS_TOKEN_MIN} characters, or "" for staff-only access; got '
                f"{type(token).__name__ if not isinstance(token, str) else 'a shorter string'}.",
                hint="Make one with: python -c 'import secrets; print(secrets.token_urlsafe())'",
                id="dispatch_jobs.E060",
            )
        )
    cap = value.get("METRICS_COUNT_CAP", DEFAULTS["METRICS_COUNT_CAP"])
    errors += _check_integer("METRICS_COUNT_CAP", cap, 1, "dispatch_jobs.E061")
    return errors


@register()
def check_schedules(app_configs: Any = None, **kwargs: Any) -> list[Any]:
    """Every ``DISPATCH_JOBS["SCHEDULES"]`` entry parses (cron, zone, interval,
    keys), so a typo stops ``runjobs`` at start rather than a schedule at its tick."""
    value = getattr(django_settings, "DISPATCH_JOBS", {})
    if not isinstance(value, dict) or "SCHEDULES" not in value:
        return []  # E001 already says so, or nothing is declared
    from .schedules import settings_schedules
    from .ticks import InvalidSchedule

    try:
        settings_schedules()
    except InvalidSchedule as exc:
        return [
            Error(
                f'DISPATCH_JOBS["SCHEDULES"]: {exc}',
                hint="See docs/how-to/periodic.md for the entry's keys.",
                id="dispatch_jobs.E080",
            )
        ]
    return []
