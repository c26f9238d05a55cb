"""Settings: one typed property per key of the ``DISPATCH_JOBS`` dict.

Read lazily on every access so ``override_settings`` works in tests. Defaults
live in ``DEFAULTS``; system checks (``checks.py``) validate user values.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings as django_settings

DEFAULTS: dict[str, Any] = {
    # Database alias the job tables live in.
    "DATABASE": "default",
    # Encoded payload cap (args + kwargs as JSON), in bytes.
    "MAX_PAYLOAD_BYTES": 64 * 1024,
    # Default job options.
    "DEFAULT_MAX_RETRIES": 3,
    "DEFAULT_TIMEOUT": timedelta(minutes=5),
    # Lease defaults (the seed's): a 30 s liveness window renewed every 10 s.
    "LEASE_TTL": timedelta(seconds=30),
    "HEARTBEAT_INTERVAL": timedelta(seconds=10),
    # A running job with no lease at all is adopted by reclaim after this much silence.
    "UNLEASED_RECLAIM_GRACE": timedelta(minutes=5),
    # Default page size of the cursor-paged job list.
    "LIST_PAGE_SIZE": 50,
    # --- The runjobs worker (docs/worker.md). Command-line arguments override these.
    # The queues a worker claims from (None: every queue the dispatch_jobs backends
    # in TASKS accept, see worker/queues.py), and how many jobs it runs at once.
    "WORKER_QUEUES": None,
    "WORKER_CONCURRENCY": 4,
    # Jobs claimed ahead of free executor threads, held under lease in a local
    # buffer: larger claims per statement, for throughput. Opt-in: a prefetched job
    # waits for a thread, and shares its worker's fate (a crash evicts it too).
    "WORKER_PREFETCH": 0,
    # Idle polling: at once after dispatching, then doubling up to the maximum.
    "POLL_INTERVAL": timedelta(seconds=1),
    "MAX_POLL_INTERVAL": timedelta(seconds=5),
    # How long a draining worker waits for running jobs before handing them back.
    "SHUTDOWN_GRACE": timedelta(seconds=30),
    # Retry backoff: full jitter, uniform in [0, min(cap, base * 2**retry)].
    "RETRY_BACKOFF_BASE": timedelta(seconds=1),
    "RETRY_BACKOFF_CAP": timedelta(minutes=1),
    # Poison protection: a job evicted more than this many times fails.
    "MAX_EVICTIONS": 5,
    # Maintenance runners, on one elected worker at a time.
    "RECLAIM_ENABLED": True,
    "RECLAIM_INTERVAL": timedelta(seconds=5),
    "PURGE_ENABLED": True,
    "PURGE_INTERVAL": timedelta(hours=1),
    "COMPLETED_RETENTION": timedelta(days=7),
    "FAILED_RETENTION": timedelta(days=30),
    "USAGE_PURGE_ENABLED": True,
    "USAGE_PURGE_INTERVAL": timedelta(hours=1),
    "USAGE_RETENTION": timedelta(days=30),
    # Periodic schedules declared in settings: {name: {"task": ..., "cron" or "every": ...}}
    # (docs/how-to/periodic.md), synced into the Schedule table when a worker starts.
    "SCHEDULES": {},
    # A worker row silent for this long is removed from the registry.
    "WORKER_STALE_AFTER": timedelta(minutes=2),
    # The periodic one-line summary of a worker.
    "SUMMARY_INTERVAL": timedelta(minutes=1),
    # PostgreSQL only: wake idle workers with LISTEN/NOTIFY when jobs are enqueued.
    "NOTIFY": True,
    # PostgreSQL: the DATABASES alias the worker LISTENs on, and only that. "" (the
    # default) listens over DATABASE's own settings. Behind a transaction-mode pooler
    # such as PgBouncer, where LISTEN hears nothing, name a direct connection to the
    # same database here (docs/deployment.md). Polling stays the guarantee.
    "LISTEN_DATABASE": "",
    # --- The admin (docs/admin.md).
    # PostgreSQL: admin list queries are cancelled after this long.
    "ADMIN_STATEMENT_TIMEOUT": timedelta(seconds=5),
    # Job lists count exactly up to this many rows, then show "10,000+".
    "ADMIN_COUNT_THRESHOLD": 10_000,
    # "Apply to all matching" acts on at most this many jobs; more is refused.
    "ADMIN_BULK_CAP": 1_000,
    # Dead-letter and usage summaries read at most this many newest rows.
    "ADMIN_SCAN_CAP": 10_000,
    # Dotted path of a callable(value, *, job, field) -> value that hides secrets
    # in arguments and return values before the admin shows them ("" for none).
    "REDACT": "",
    # --- Metrics (docs/observability.md).
    # The bearer token Prometheus presents to the metrics view ("": staff only).
    "METRICS_TOKEN": "",
    # Queue depth gauges count ready jobs up to this many per queue and state.
    "METRICS_COUNT_CAP": 10_000,
    # --- The tasks backend (docs/tasks.md).
    # Dotted path of a callable(request) -> Scope | (app_id, org_id) | None that
    # ScopeMiddleware uses to set the scope jobs enqueued by a request carry.
    "SCOPE_FROM_REQUEST": "",
}


class Settings:
    """Typed accessors over ``settings.DISPATCH_JOBS``."""

    @property
    def user_settings(self) -> dict[str, Any]:
        value = getattr(django_settings, "DISPATCH_JOBS", {})
        return value if isinstance(value, dict) else {}

    def get(self, key: str) -> Any:
        return self.user_settings.get(key, DEFAULTS[key])

    @property
    def database(self) -> str:
        return str(self.get("DATABASE"))

    @property
    def max_payload_bytes(self) -> int:
        return int(self.get("MAX_PAYLOAD_BYTES"))

    @property
    def default_max_retries(self) -> int:
        return int(self.get("DEFAULT_MAX_RETRIES"))

    @property
    def default_timeout(self) -> timedelta:
        return self.get("DEFAULT_TIMEOUT")

    @property
    def lease_ttl(self) -> timedelta:
        return self.get("LEASE_TTL")

    @property
    def heartbeat_interval(self) -> timedelta:
        return self.get("HEARTBEAT_INTERVAL")

    @property
    def unleased_reclaim_grace(self) -> timedelta:
        return self.get("UNLEASED_RECLAIM_GRACE")

    @property
    def list_page_size(self) -> int:
        return int(self.get("LIST_PAGE_SIZE"))

    @property
    def worker_queues(self) -> list[str] | None:
        value = self.get("WORKER_QUEUES")
        return None if value is None else list(value)

    @property
    def worker_concurrency(self) -> int:
        return int(self.get("WORKER_CONCURRENCY"))

    @property
    def worker_prefetch(self) -> int:
        return int(self.get("WORKER_PREFETCH"))

    @property
    def poll_interval(self) -> timedelta:
        return self.get("POLL_INTERVAL")

    @property
    def max_poll_interval(self) -> timedelta:
        return self.get("MAX_POLL_INTERVAL")

    @property
    def shutdown_grace(self) -> timedelta:
        return self.get("SHUTDOWN_GRACE")

    @property
    def retry_backoff_base(self) -> timedelta:
        return self.get("RETRY_BACKOFF_BASE")

    @property
    def retry_backoff_cap(self) -> timedelta:
        return self.get("RETRY_BACKOFF_CAP")

    @property
    def max_evictions(self) -> int:
        return int(self.get("MAX_EVICTIONS"))

    @property
    def reclaim_enabled(self) -> bool:
        return bool(self.get("RECLAIM_ENABLED"))

    @property
    def reclaim_interval(self) -> timedelta:
        return self.get("RECLAIM_INTERVAL")

    @property
    def purge_enabled(self) -> bool:
        return bool(self.get("PURGE_ENABLED"))

    @property
    def purge_interval(self) -> timedelta:
        return self.get("PURGE_INTERVAL")

    @property
    def completed_retention(self) -> timedelta:
        return self.get("COMPLETED_RETENTION")

    @property
    def failed_retention(self) -> timedelta:
        return self.get("FAILED_RETENTION")

    @property
    def usage_purge_enabled(self) -> bool:
        return bool(self.get("USAGE_PURGE_ENABLED"))

    @property
    def usage_purge_interval(self) -> timedelta:
        return self.get("USAGE_PURGE_INTERVAL")

    @property
    def usage_retention(self) -> timedelta:
        return self.get("USAGE_RETENTION")

    @property
    def schedules(self) -> Any:
        return self.get("SCHEDULES")

    @property
    def worker_stale_after(self) -> timedelta:
        return self.get("WORKER_STALE_AFTER")

    @property
    def summary_interval(self) -> timedelta:
        return self.get("SUMMARY_INTERVAL")

    @property
    def notify(self) -> bool:
        return bool(self.get("NOTIFY"))

    @property
    def listen_database(self) -> str:
        """The alias LISTEN uses: ``LISTEN_DATABASE``, else ``DATABASE``."""
        return str(self.get("LISTEN_DATABASE") or self.database)

    @property
    def admin_statement_timeout(self) -> timedelta:
        return self.get("ADMIN_STATEMENT_TIMEOUT")

    @property
    def admin_count_threshold(self) -> int:
        return int(self.get("ADMIN_COUNT_THRESHOLD"))

    @property
    def admin_bulk_cap(self) -> int:
        return int(self.get("ADMIN_BULK_CAP"))

    @property
    def admin_scan_cap(self) -> int:
        return int(self.get("ADMIN_SCAN_CAP"))

    @property
    def redact(self) -> str:
        return str(self.get("REDACT") or "")

    @property
    def metrics_token(self) -> str:
        return str(self.get("METRICS_TOKEN") or "")

    @property
    def metrics_count_cap(self) -> int:
        return int(self.get("METRICS_COUNT_CAP"))

    @property
    def scope_from_request(self) -> str:
        return str(self.get("SCOPE_FROM_REQUEST") or "")


settings = Settings()


def declared_queues() -> set[str]:
    """``default`` and the queues the dispatch_jobs backends in ``TASKS`` name (their
    ``QUEUES``): the queues the admin and the metrics show even while empty."""
    names = {"default"}
    for config in getattr(django_settings, "TASKS", {}).values():
        if "dispatch_jobs" in str(config.get("BACKEND", "")):
            names.update(str(q) for q in config.get("QUEUES", []) or [])
    return names
