"""What a worker writes once at start, before its first claim: the schedules
declared in code and the queue limits declared in settings.

Neither is fatal: a failure is logged, the connection reset, and the worker runs
on what is already stored (the stored schedules still fire, the stored limits
hold).
"""

from __future__ import annotations

import logging

from .. import scheduler, store
from ..queue_limits import settings_queue_limits
from .transient import reset_connection

logger = logging.getLogger("dispatch_jobs.worker")


def sync_at_start() -> None:
    """The schedules, then the queue limits (see each)."""
    sync_schedules()
    sync_queue_limits()


def sync_schedules() -> None:
    """Write the code-declared schedules (``@periodic``, SCHEDULES) at start.
    A failure is logged, not fatal: the schedules already stored still fire."""
    try:
        report = scheduler.sync_declared_schedules()
    except Exception:  # noqa: BLE001 - jobs must still run
        logger.exception("Syncing the declared schedules failed.")
        reset_connection()
        return
    if report.created or report.updated:
        logger.info(
            "Schedules synced: %d created, %d updated.",
            len(report.created),
            len(report.updated),
        )


def sync_queue_limits() -> None:
    """Write the settings' QUEUE_LIMITS onto the queues at start (limits set in
    the admin win). A failure is logged, not fatal: the stored limits hold."""
    try:
        changed = store.sync_queue_limits(settings_queue_limits())
    except Exception:  # noqa: BLE001 - jobs must still run
        logger.exception("Syncing the QUEUE_LIMITS setting failed.")
        reset_connection()
        return
    if changed:
        logger.info("Queue limits synced from settings: %s.", ", ".join(changed))
