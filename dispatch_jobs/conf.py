"""Settings: every key of the ``DISPATCH_JOBS`` dict, declared once, in ``Settings``.

One entry per key: its section, its kind (the values it takes and the type it
reads as), its default, the system check id that refuses a bad value, and what
it does. From that entry follow the typed attribute (``settings.lease_ttl`` reads
``LEASE_TTL``), the check of its value (``checks.py``), ``DEFAULTS``, and its row
of docs/reference/settings.md (``scripts/mkdocs_hooks.py``). Adding a setting is
adding an entry; checks that relate two settings stay in ``checks.py``.

Values are read on every access, so ``override_settings`` works in tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any, overload

from django.conf import settings as django_settings

from . import limits, rungs
from .setting_kinds import (
    CallablePath,
    Choice,
    Duration,
    Flag,
    Integer,
    Kind,
    QueueLimitsTable,
    QueueNames,
    Secret,
    Text,
)


@dataclass(frozen=True)
class Section:
    """A part of the settings page, and the check function of its values (checks.py)."""

    title: str
    note: str = ""


STORE = Section("The store")
WORKER = Section("The runjobs worker", "Command-line arguments override these (docs/worker.md).")
ADMIN = Section("The admin", "See docs/admin.md.")
METRICS = Section("Metrics", "See docs/observability.md.")
TASKS = Section("The tasks backend", "See docs/tasks.md.")
ARTIFACTS = Section(
    "Artifacts and estimates", "See docs/how-to/inputs.md and docs/how-to/estimates.md."
)


class Setting[T]:
    """One key of ``DISPATCH_JOBS``, declared as the attribute of ``Settings`` that is
    its name in lower case. Reading the attribute gives the value as ``T``: the
    user's, else the default (``or_setting``: an empty value reads as that setting)."""

    def __init__(
        self,
        section: Section,
        kind: Kind[T],
        default: T,
        doc: str,
        *,
        check: str = "",
        or_setting: str = "",
    ) -> None:
        self.section, self.kind, self.default, self.doc = section, kind, default, doc
        self.check, self.or_setting = check, or_setting
        self.key = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.key = name.upper()

    @overload
    def __get__(self, instance: None, owner: type) -> Setting[T]: ...

    @overload
    def __get__(self, instance: Settings, owner: type) -> T: ...

    def __get__(self, instance: Settings | None, owner: type) -> Setting[T] | T:
        if instance is None:
            return self
        value = instance.user_settings.get(self.key, self.default)
        if self.or_setting and not value:
            value = instance.get(self.or_setting)
        return self.kind.read(value)

    def problem(self, value: object) -> str | None:
        """The check's message refusing ``value`` for this key, or None."""
        return self.kind.problem(self.key, value) if self.check else None


class Settings:
    """Typed accessors over ``settings.DISPATCH_JOBS``: one ``Setting`` per key."""

    # --- The store.
    database = Setting(STORE, Text(), "default", "Database alias the job tables live in.")
    max_payload_bytes = Setting(
        STORE,
        Integer(1),
        64 * 1024,
        "Encoded payload cap (args + kwargs as JSON), in bytes.",
        check="dispatch_jobs.E004",
    )
    default_max_retries = Setting(
        STORE,
        Integer(0),
        3,
        "Retries of a job whose task sets no max_retries.",
        check="dispatch_jobs.E004",
    )
    default_timeout = Setting(
        STORE,
        Duration(limits.TIMEOUT_MIN, limits.TIMEOUT_MAX),
        timedelta(minutes=5),
        "Time limit of one attempt of a job whose task sets no timeout.",
        check="dispatch_jobs.E003",
    )
    lease_ttl = Setting(
        STORE,
        Duration(limits.LEASE_TTL_MIN, limits.LEASE_TTL_MAX),
        timedelta(seconds=30),
        "How long a running job's lease lives unless renewed (its liveness window); "
        "a task's lease_ttl overrides it.",
        check="dispatch_jobs.E003",
    )
    heartbeat_interval = Setting(
        STORE,
        Duration(),
        timedelta(seconds=10),
        "How often a worker renews the leases it holds; shorter than LEASE_TTL.",
        check="dispatch_jobs.E003",
    )
    unleased_reclaim_grace = Setting(
        STORE,
        Duration(),
        timedelta(minutes=5),
        "A running job with no lease at all is adopted by reclaim after this much silence.",
        check="dispatch_jobs.E003",
    )
    list_page_size = Setting(
        STORE,
        Integer(1),
        50,
        "Default page size of the cursor-paged job list.",
        check="dispatch_jobs.E004",
    )

    # --- The runjobs worker (docs/worker.md).
    worker_queues = Setting(
        WORKER,
        QueueNames(),
        None,
        "The queues a worker claims from (None: every queue the dispatch_jobs backends "
        "in TASKS accept).",
        check="dispatch_jobs.E032",
    )
    worker_concurrency = Setting(
        WORKER,
        Integer(1),
        4,
        "How many jobs a worker runs at once.",
        check="dispatch_jobs.E031",
    )
    worker_prefetch = Setting(
        WORKER,
        Integer(0),
        0,
        "Jobs claimed ahead of free executor threads, held under lease in a local buffer: "
        "larger claims per statement, for throughput. Opt-in: a prefetched job waits for "
        "a thread, and shares its worker's fate (a crash evicts it too).",
        check="dispatch_jobs.E031",
    )
    worker_execution = Setting(
        WORKER,
        Choice(rungs.RUNGS),
        rungs.IN_PROCESS,
        "The rung a worker runs every job at: 'in-process' (threads) or 'subprocess' "
        "(supervised child processes: hard timeouts and memory limits, crashes contained, "
        "CPU, peak RSS and disk writes measured). It claims only jobs that need that rung "
        "or less (docs/worker.md, 'Execution rungs').",
        check="dispatch_jobs.E036",
    )
    child_max_jobs = Setting(
        WORKER,
        Integer(1),
        1000,
        "Subprocess rung: a child process is replaced after running this many jobs.",
        check="dispatch_jobs.E031",
    )
    child_max_rss = Setting(
        WORKER,
        Integer(0),
        1024**3,
        "Subprocess rung: a child whose resident memory has grown past this many bytes is "
        "replaced after its job (0: no ceiling).",
        check="dispatch_jobs.E031",
    )
    child_kill_grace = Setting(
        WORKER,
        Duration(zero=True),
        timedelta(seconds=2),
        "Subprocess rung: how long a child killed with SIGTERM (its job timed out or was "
        "cancelled) has to exit before SIGKILL.",
        check="dispatch_jobs.E030",
    )
    poll_interval = Setting(
        WORKER,
        Duration(),
        timedelta(seconds=1),
        "Idle polling: at once after dispatching, then from this delay doubling up to "
        "MAX_POLL_INTERVAL.",
        check="dispatch_jobs.E030",
    )
    max_poll_interval = Setting(
        WORKER,
        Duration(),
        timedelta(seconds=5),
        "The longest delay between two polls of an idle worker.",
        check="dispatch_jobs.E030",
    )
    shutdown_grace = Setting(
        WORKER,
        Duration(zero=True),
        timedelta(seconds=30),
        "How long a draining worker waits for running jobs before handing them back "
        "(zero: at once).",
        check="dispatch_jobs.E030",
    )
    retry_backoff_base = Setting(
        WORKER,
        Duration(limits.BACKOFF_MIN, limits.BACKOFF_MAX),
        timedelta(seconds=1),
        "Retry backoff: full jitter, uniform in [0, min(cap, base * 2**retry)]; the base.",
        check="dispatch_jobs.E030",
    )
    retry_backoff_cap = Setting(
        WORKER,
        Duration(limits.BACKOFF_MIN, limits.BACKOFF_MAX),
        timedelta(minutes=1),
        "Retry backoff: the longest delay before a retry.",
        check="dispatch_jobs.E030",
    )
    max_evictions = Setting(
        WORKER,
        Integer(0),
        5,
        "Poison protection: a job evicted more than this many times fails.",
        check="dispatch_jobs.E031",
    )
    reclaim_enabled = Setting(
        WORKER,
        Flag(),
        True,
        "Run reclaim (jobs whose lease lapsed) on the elected worker.",
        check="dispatch_jobs.E033",
    )
    reclaim_interval = Setting(
        WORKER,
        Duration(),
        timedelta(seconds=5),
        "How often reclaim runs.",
        check="dispatch_jobs.E030",
    )
    purge_enabled = Setting(
        WORKER,
        Flag(),
        True,
        "Run the purge of finished jobs past their retention on the elected worker.",
        check="dispatch_jobs.E033",
    )
    purge_interval = Setting(
        WORKER,
        Duration(),
        timedelta(hours=1),
        "How often the purge runs.",
        check="dispatch_jobs.E030",
    )
    completed_retention = Setting(
        WORKER,
        Duration(),
        timedelta(days=7),
        "How long a completed job is kept before the purge deletes it.",
        check="dispatch_jobs.E030",
    )
    failed_retention = Setting(
        WORKER,
        Duration(),
        timedelta(days=30),
        "How long a failed job is kept before the purge deletes it.",
        check="dispatch_jobs.E030",
    )
    usage_purge_enabled = Setting(
        WORKER,
        Flag(),
        True,
        "Run the purge of old usage rows on the elected worker.",
        check="dispatch_jobs.E033",
    )
    usage_purge_interval = Setting(
        WORKER,
        Duration(),
        timedelta(hours=1),
        "How often the usage purge runs.",
        check="dispatch_jobs.E030",
    )
    usage_retention = Setting(
        WORKER,
        Duration(),
        timedelta(days=30),
        "How long usage rows are kept.",
        check="dispatch_jobs.E030",
    )
    schedules = Setting[dict[str, Any]](
        WORKER,
        Kind(),
        {},
        "Periodic schedules declared in settings, {name: {task, cron or every, ...}}, "
        "synced into the Schedule table when a worker starts (docs/how-to/periodic.md).",
    )
    queue_limits = Setting(
        WORKER,
        QueueLimitsTable(),
        {},
        'Queue limits declared in settings, {queue: {"max_running": 5, '
        '"max_running_per_org": 2, "rate": "100/m"}}, synced onto the queues when a worker '
        "starts; limits set in the admin win (docs/how-to/limits.md).",
        check="dispatch_jobs.E035",
    )
    worker_stale_after = Setting(
        WORKER,
        Duration(),
        timedelta(minutes=2),
        "A worker row silent for this long is removed from the registry.",
        check="dispatch_jobs.E030",
    )
    summary_interval = Setting(
        WORKER,
        Duration(),
        timedelta(minutes=1),
        "How often a worker logs its one-line summary.",
        check="dispatch_jobs.E030",
    )
    notify = Setting(
        WORKER,
        Flag(),
        True,
        "PostgreSQL only: wake idle workers with LISTEN/NOTIFY when jobs are enqueued.",
        check="dispatch_jobs.E033",
    )
    listen_database = Setting(
        WORKER,
        Text(),
        "",
        'PostgreSQL: the DATABASES alias the worker LISTENs on, and only that. "" (the '
        "default) listens over DATABASE's own settings. Behind a transaction-mode pooler "
        "such as PgBouncer, where LISTEN hears nothing, name a direct connection to the "
        "same database here (docs/deployment.md). Polling stays the guarantee.",
        or_setting="DATABASE",
    )

    # --- The admin (docs/admin.md).
    admin_statement_timeout = Setting(
        ADMIN,
        Duration(limits.TIMEOUT_MIN),
        timedelta(seconds=5),
        "PostgreSQL: admin list queries are cancelled after this long.",
        check="dispatch_jobs.E050",
    )
    admin_count_threshold = Setting(
        ADMIN,
        Integer(1),
        10_000,
        'Job lists count exactly up to this many rows, then show "10,000+".',
        check="dispatch_jobs.E051",
    )
    admin_bulk_cap = Setting(
        ADMIN,
        Integer(1),
        1_000,
        '"Apply to all matching" acts on at most this many jobs; more is refused.',
        check="dispatch_jobs.E051",
    )
    admin_scan_cap = Setting(
        ADMIN,
        Integer(1),
        10_000,
        "Dead-letter and usage summaries read at most this many newest rows.",
        check="dispatch_jobs.E051",
    )
    redact = Setting(
        ADMIN,
        CallablePath("(value, *, job, field) -> value"),
        "",
        "Dotted path of a callable(value, *, job, field) -> value that hides secrets in "
        'arguments and return values before the admin shows them ("" for none).',
        check="dispatch_jobs.E052",
    )

    # --- Metrics (docs/observability.md).
    metrics_token = Setting(
        METRICS,
        Secret(
            16,  # shorter is guessable by a scraper that tries
            "for staff-only access",
            hint="Make one with: python -c 'import secrets; print(secrets.token_urlsafe())'",
        ),
        "",
        'The bearer token Prometheus presents to the metrics view ("": staff only).',
        check="dispatch_jobs.E060",
    )
    metrics_count_cap = Setting(
        METRICS,
        Integer(1),
        10_000,
        "Queue depth gauges count ready jobs up to this many per queue and state.",
        check="dispatch_jobs.E061",
    )

    # --- The tasks backend (docs/tasks.md).
    scope_from_request = Setting(
        TASKS,
        CallablePath("(request) -> Scope | (app_id, org_id) | None"),
        "",
        "Dotted path of a callable(request) -> Scope | (app_id, org_id) | None that "
        "ScopeMiddleware uses to set the scope jobs enqueued by a request carry.",
        check="dispatch_jobs.E103",
    )

    # --- Artifacts and estimates (docs/how-to/inputs.md, docs/how-to/estimates.md).
    artifact_storage = Setting(
        ARTIFACTS,
        Text(),
        "default",
        "The STORAGES alias artifacts.register() writes new artifacts to.",
        check="dispatch_jobs.E092",
    )
    artifact_cache_dir = Setting(
        ARTIFACTS,
        Text(),
        "",
        "The directory a worker stages its jobs' inputs in, one per worker process "
        '("": a directory named after the worker under the system temp directory).',
    )
    artifact_cache_bytes = Setting(
        ARTIFACTS,
        Integer(1),
        10 * 1024**3,
        "The most bytes a worker's input cache keeps; least recently used files beyond it "
        "are removed, never one a running job is using.",
        check="dispatch_jobs.E090",
    )
    staging_retries = Setting(
        ARTIFACTS,
        Integer(0),
        5,
        "Attempts whose inputs could not be staged that are not charged to the job's "
        "retries; one more fails the job.",
        check="dispatch_jobs.E090",
    )
    estimate_resources = Setting(
        ARTIFACTS,
        Flag(),
        False,
        "Raise every task's declared memory and cpu from its measured usage at enqueue "
        "(a task's estimate= overrides it).",
        check="dispatch_jobs.E091",
    )

    @property
    def user_settings(self) -> dict[str, Any]:
        value = getattr(django_settings, "DISPATCH_JOBS", {})
        return value if isinstance(value, dict) else {}

    def get(self, key: str) -> Any:
        """The raw value of ``key``: the user's, else the default."""
        return self.user_settings.get(key, DEFAULTS[key])


# Every setting, in the order declared (the order of the settings page).
TABLE: tuple[Setting[Any], ...] = tuple(
    value for value in vars(Settings).values() if isinstance(value, Setting)
)
DEFAULTS: dict[str, Any] = {setting.key: setting.default for setting in TABLE}

settings = Settings()


def declared_queues() -> set[str]:
    """``default`` and the queues the dispatch_jobs backends in ``TASKS`` name (their
    ``QUEUES``): the queues the admin and the metrics show even while empty."""
    names = {"default"}
    for config in getattr(django_settings, "TASKS", {}).values():
        if "dispatch_jobs" in str(config.get("BACKEND", "")):
            names.update(str(q) for q in config.get("QUEUES", []) or [])
    return names
