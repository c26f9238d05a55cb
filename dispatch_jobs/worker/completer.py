"""The completer: persists settled attempts behind the lease fence, in batches.

Outcomes go through ``store.complete_leased_jobs`` (one transaction per batch,
one fence per job), each with its usage row (failed attempts included). A lease
lost meanwhile is a silent no-op: the outcome and its usage are discarded and
the row stays as its new holder has it.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Sequence
from datetime import timedelta

from django.db import connections

from .. import store
from .executor import EXECUTOR_NAME, Attempt
from .joblog import log_attempt
from .outcomes import Kind, Outcome
from .transient import GaveUp, retry_transient

logger = logging.getLogger("dispatch_jobs.worker")

# The largest batch written in one transaction.
MAX_BATCH = 500


def persist(
    attempts: Sequence[Attempt], worker_id: str, *, stop: threading.Event | None = None
) -> set[int]:
    """Write the attempts' outcomes and usage; return the ids whose outcome was
    discarded (lease lost, or cancelled before it finished)."""
    writable = [a for a in attempts if a.outcome.kind != Kind.CANCELLED]
    discarded = {a.job.pk for a in attempts if a.outcome.kind == Kind.CANCELLED}
    completions = [
        store.Completion(a.job, a.epoch, a.retry_in, _spent(a.outcome)) for a in writable
    ]
    lost = retry_transient(
        lambda: store.complete_leased_jobs(worker_id, completions),
        "writing job outcomes",
        stop=stop,
    )
    if logger.isEnabledFor(logging.INFO):
        for attempt in writable:
            if attempt.job.pk not in lost:
                log_attempt(attempt)
        for job_id in sorted(lost):
            logger.info("Job %s: lease lost before its outcome was written; discarded.", job_id)
    return discarded | lost


def _spent(outcome: Outcome) -> store.Spent:
    return store.Spent(
        wall_time=timedelta(seconds=outcome.wall_time),
        cpu_time=timedelta(seconds=outcome.cpu_time),
        executor=EXECUTOR_NAME,
    )


class Completer:
    """The completer stage as a thread: takes attempts from a queue, writes them
    in batches, and reports each job as done through ``on_done(job_id)``."""

    def __init__(
        self, worker_id: str, on_done: Callable[[Attempt, bool], None], stop: threading.Event
    ) -> None:
        self.worker_id = worker_id
        self.on_done = on_done
        self.stop = stop
        self.inbox: queue.Queue[Attempt | None] = queue.Queue()
        self.thread = threading.Thread(target=self._run, name="dispatch-completer", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def submit(self, attempt: Attempt) -> None:
        self.inbox.put(attempt)

    def close(self, timeout: float | None = None) -> None:
        """Finish what is queued, then stop."""
        self.inbox.put(None)
        self.thread.join(timeout)

    def _run(self) -> None:
        try:
            while True:
                first = self.inbox.get()
                if first is None:
                    return
                batch = [first]
                closing = False
                while len(batch) < MAX_BATCH:
                    try:
                        item = self.inbox.get_nowait()
                    except queue.Empty:
                        break
                    if item is None:
                        closing = True
                        break
                    batch.append(item)
                self._write(batch)
                if closing:
                    return
        finally:
            connections.close_all()

    def _write(self, batch: list[Attempt]) -> None:
        try:
            discarded = persist(batch, self.worker_id, stop=self.stop)
        except GaveUp:
            # Stopping with the database away: the leases expire and the jobs are
            # reclaimed elsewhere. Nothing is lost; the outcomes are.
            discarded = {a.job.pk for a in batch}
        except Exception:  # noqa: BLE001 - never let one bad batch kill the stage
            logger.exception("Could not write %d job outcome(s).", len(batch))
            discarded = {a.job.pk for a in batch}
        for attempt in batch:
            self.on_done(attempt, attempt.job.pk not in discarded)
