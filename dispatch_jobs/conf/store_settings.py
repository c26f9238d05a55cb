"""The store's settings: where the job tables live, and the bounds every job
enqueued into them carries unless its task says otherwise."""

from __future__ import annotations

from datetime import timedelta

from .. import limits
from ..setting_kinds import Duration, Integer, Text
from .setting import STORE, Setting


class StoreSettings:
    """The keys of the settings page's "The store" section."""

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
