"""The store: the only code that writes job, lease, worker and usage rows.

The seed's ``Store``, ``LeaseStore``, ``Lister`` and ``UsageRecorder`` as
functions. Every comparison that decides readiness or ownership (run_at, lease
expiry) uses the database's clock. See docs/store.md for the guarantees.
"""

from ..payloads import EncodedJSON, encode_payload, encoded_size, payload_size
from . import reads
from .artifacts import artifacts_by_id, delete_artifact, record_artifact
from .claim import claim_jobs, suspects_waiting
from .completion import complete_leased_jobs, purge_finished_jobs
from .db import refused_by_content, statement_timeout
from .enqueue import enqueue_job, enqueue_jobs, insert_jobs, prepare, resource_columns
from .jobs import (
    count_jobs,
    delete_job,
    get_job,
    heartbeat_job,
    list_jobs_by_state,
    reap_stale_jobs,
    update_job,
)
from .leadership import acquire_leadership, leader_of, release_leadership
from .leases import (
    LEASE_COLUMNS,
    cancel_message,
    cancel_requests,
    reclaim_expired_leases,
    release_leases,
    renew_lease,
    renew_leases,
    update_leased_job,
)
from .listing import list_jobs
from .notify import CHANNEL as NOTIFY_CHANNEL
from .notify import notify_enabled, notify_queues
from .operations import (
    REPLAYABLE_STATES,
    OperationReport,
    cancel_jobs,
    delete_jobs,
    replay_jobs,
    run_jobs_now,
)
from .options import ClaimOptions, ListOptions, Page
from .queues import (
    forget_limited_queues,
    limited_queues,
    pause_queue,
    paused_queues,
    queue_limits,
    resume_queue,
    revert_queue_limits,
    set_queue_limits,
    sync_queue_limits,
)
from .rollup import MARK as ROLLUP_MARK
from .rollup import roll_up_finished_jobs, rollup_watermark
from .rows import NEW_ROW, NewJobs
from .schedules import (
    SyncReport,
    advance_schedule,
    delete_schedule,
    due_schedules,
    fire_schedule_tick,
    purge_schedule_ticks,
    run_schedule_now,
    save_schedule,
    set_schedules_enabled,
    stop_schedule,
    sync_schedules,
)
from .testing_ops import delete_all_jobs
from .transitions import Cancelled, Completed, Failed, Retry, Settled, Spent, Transition
from .usage import list_usage, purge_usage, record_usage, record_usages, usage_samples
from .workers import (
    deregister_worker,
    live_workers,
    register_worker,
    remove_stale_workers,
    set_worker_state,
    touch_worker,
)

__all__ = [
    "REPLAYABLE_STATES",
    "delete_all_jobs",
    "ROLLUP_MARK",
    "reads",
    "refused_by_content",
    "statement_timeout",
    "LEASE_COLUMNS",
    "ClaimOptions",
    "Cancelled",
    "Completed",
    "Failed",
    "Retry",
    "Settled",
    "Spent",
    "Transition",
    "NOTIFY_CHANNEL",
    "ListOptions",
    "Page",
    "acquire_leadership",
    "artifacts_by_id",
    "delete_artifact",
    "record_artifact",
    "claim_jobs",
    "suspects_waiting",
    "complete_leased_jobs",
    "count_jobs",
    "delete_job",
    "deregister_worker",
    "EncodedJSON",
    "NEW_ROW",
    "NewJobs",
    "encode_payload",
    "encoded_size",
    "enqueue_job",
    "insert_jobs",
    "prepare",
    "resource_columns",
    "enqueue_jobs",
    "get_job",
    "heartbeat_job",
    "leader_of",
    "list_jobs",
    "list_jobs_by_state",
    "list_usage",
    "live_workers",
    "notify_enabled",
    "notify_queues",
    "pause_queue",
    "forget_limited_queues",
    "limited_queues",
    "queue_limits",
    "revert_queue_limits",
    "set_queue_limits",
    "sync_queue_limits",
    "paused_queues",
    "payload_size",
    "purge_finished_jobs",
    "purge_usage",
    "reap_stale_jobs",
    "reclaim_expired_leases",
    "record_usage",
    "record_usages",
    "usage_samples",
    "register_worker",
    "release_leadership",
    "release_leases",
    "remove_stale_workers",
    "renew_lease",
    "renew_leases",
    "resume_queue",
    "roll_up_finished_jobs",
    "rollup_watermark",
    "set_worker_state",
    "touch_worker",
    "update_job",
    "update_leased_job",
    "OperationReport",
    "SyncReport",
    "advance_schedule",
    "delete_schedule",
    "due_schedules",
    "fire_schedule_tick",
    "purge_schedule_ticks",
    "run_schedule_now",
    "save_schedule",
    "set_schedules_enabled",
    "stop_schedule",
    "sync_schedules",
    "cancel_jobs",
    "cancel_message",
    "cancel_requests",
    "delete_jobs",
    "replay_jobs",
    "run_jobs_now",
]
