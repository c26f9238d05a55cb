"""System checks for DISPATCH_JOBS and the database it uses. One id per problem.

Each value is checked by its kind, as ``conf.Settings`` declares it (its id
there too), by the check function of its section; what relates two settings, or
a setting and ``DATABASES``, is checked here.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings as django_settings
from django.core.checks import Error, Warning, register

from .conf import ADMIN, ARTIFACTS, DEFAULTS, METRICS, STORE, TABLE, TASKS, WORKER, Section


def _check_values(section: Section, value: dict[str, Any]) -> list[Any]:
    """The errors of the values of ``section``'s settings, by their declared kind."""
    errors: list[Any] = []
    for setting in TABLE:
        if setting.section is section:
            message = setting.problem(value.get(setting.key, setting.default))
            if message:
                errors.append(Error(message, hint=setting.kind.hint or None, id=setting.check))
    return errors


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
    errors += _check_values(STORE, value)
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
@register()
def check_admin_settings(app_configs: Any = None, **kwargs: Any) -> list[Any]:
    value = getattr(django_settings, "DISPATCH_JOBS", {})
    if not isinstance(value, dict):
        return []  # E001 already says so
    return _check_values(ADMIN, value)


# --- The tasks backend's settings (docs/tasks.md). Ids from E100 keep clear of
# other parts; DispatchBackend.check() uses E101 and E102.
@register()
def check_tasks_settings(app_configs: Any = None, **kwargs: Any) -> list[Any]:
    value = getattr(django_settings, "DISPATCH_JOBS", {})
    if not isinstance(value, dict):
        return []  # E001 already says so
    return _check_values(TASKS, value)


# --- The runjobs worker's settings (docs/worker.md). Ids E030-E039 and W030.
@register()
def check_worker_settings(app_configs: Any = None, **kwargs: Any) -> list[Any]:
    value = getattr(django_settings, "DISPATCH_JOBS", {})
    if not isinstance(value, dict):
        return []  # E001 already says so

    def get(key: str) -> Any:
        return value.get(key, DEFAULTS[key])

    errors = _check_values(WORKER, value)
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


@register()
def check_metrics_settings(app_configs: Any = None, **kwargs: Any) -> list[Any]:
    value = getattr(django_settings, "DISPATCH_JOBS", {})
    if not isinstance(value, dict):
        return []  # E001 already says so
    return _check_values(METRICS, value)


@register()
def check_schedules(app_configs: Any = None, **kwargs: Any) -> list[Any]:
    """Every ``DISPATCH_JOBS["SCHEDULES"]`` entry parses (cron, zone, interval,
    keys), so a typo stops ``runjobs`` at start rather than a schedule at its tick."""
    value = getattr(django_settings, "DISPATCH_JOBS", {})
    if not isinstance(value, dict) or "SCHEDULES" not in value:
        return []  # E001 already says so, or nothing is declared
    from .exceptions import InvalidSchedule
    from .schedules import settings_schedules

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


# --- Artifacts and estimates (docs/how-to/inputs.md). Ids E090-E099.
@register()
def check_artifact_settings(app_configs: Any = None, **kwargs: Any) -> list[Any]:
    value = getattr(django_settings, "DISPATCH_JOBS", {})
    if not isinstance(value, dict):
        return []  # E001 already says so
    errors = _check_values(ARTIFACTS, value)
    alias = value.get("ARTIFACT_STORAGE", DEFAULTS["ARTIFACT_STORAGE"])
    if not isinstance(alias, str) or alias not in _storage_aliases():
        errors.append(
            Error(
                f"DISPATCH_JOBS['ARTIFACT_STORAGE'] is {alias!r}, which is not an alias "
                "in STORAGES.",
                hint=f"Use one of: {', '.join(sorted(_storage_aliases()))}.",
                id="dispatch_jobs.E092",
            )
        )
    return errors


def _storage_aliases() -> set[str]:
    from django.core.files.storage import storages

    return set(storages.backends)
