"""Handing claimed jobs back to pending: the unfinished ones at the end of a
drain, and one that cannot fit this worker's budget at all.

A hand-back releases the lease (``store.release_leases``): evict_count + 1 and a
new epoch (the fence), never retry_count, since neither is the job's failure.
When the database cannot be reached in time the lease lapses instead and reclaim
returns the job: nothing is lost.
"""

from __future__ import annotations

import contextlib
import logging
import threading

from .. import store
from ..exceptions import GaveUp
from .context import HANDED_BACK
from .inflight import Held, Inflight
from .transient import retry_transient

logger = logging.getLogger("dispatch_jobs.worker")


def hand_back(inflight: Inflight, worker_id: str, budget: float) -> None:
    """Return the unfinished jobs of ``inflight`` to pending, trying for at most
    ``budget`` seconds, and forget them: evict_count + 1 and a new epoch (the
    fence), never retry_count: being drained is not the job's failure."""
    entries = [held for held in inflight if held.drop()]
    if not entries:
        return
    for held in entries:
        held.cancellation.cancel(HANDED_BACK)
    leases = [(held.job.pk, held.epoch) for held in entries]
    gave_up = threading.Event()
    timer = threading.Timer(budget, gave_up.set)
    timer.start()
    try:
        returned = retry_transient(
            lambda: store.release_leases(worker_id, leases),
            "handing jobs back",
            stop=gave_up,
        )
        logger.info(
            "Handed back %d unfinished job(s): %s",
            len(returned),
            ", ".join(str(job.pk) for job in returned),
        )
    except GaveUp:
        logger.warning("Could not hand jobs back; their leases will lapse instead.")
    finally:
        timer.cancel()
    for held in entries:
        inflight.remove(held)


def hand_back_unfit(held: Held, worker_id: str, stop: threading.Event) -> bool:
    """A job needing more of a custom key than this worker has at all (the
    claim matches custom keys by presence only): back to pending, for a
    worker that has enough. Tries until ``stop`` (the drain) is set. False when
    the job was no longer this worker's to hand back; else the caller forgets it."""
    if not held.drop():
        return False
    logger.warning(
        "Job %s needs custom resources %s, more than this worker's budget: handing it back.",
        held.job.pk,
        held.job.resources,
    )
    with contextlib.suppress(GaveUp):  # else its lease lapses instead
        retry_transient(
            lambda: store.release_leases(worker_id, [(held.job.pk, held.epoch)]),
            "handing back a job that does not fit",
            stop=stop,
        )
    return True
