"""The runjobs worker's settings: what it claims and how many at once, its
execution rung, its polling, backoff and retention, and the maintenance it runs
when elected. Command-line arguments override these (docs/worker.md)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from .. import limits, rungs
from ..setting_kinds import (
    Choice,
    Duration,
    Flag,
    Integer,
    Kind,
    QueueLimitsTable,
    QueueNames,
    Text,
)
from .setting import WORKER, Setting


class WorkerSettings:
    """The keys of the settings page's "The runjobs worker" section."""

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
