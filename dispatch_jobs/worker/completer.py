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
from ..exceptions import GaveUp
from ..storable import storable_text
from .executor import Attempt
from .joblog import log_attempt
from .outcomes import Kind, Outcome, Verdict
from .transient import reset_connection, retry_transient

logger = logging.getLogger("dispatch_jobs.worker")

# The largest batch written in one transaction.
MAX_BATCH = 500


def persist(
    attempts: Sequence[Attempt], worker_id: str, *, stop: threading.Event | None = None
) -> set[int]:
    """Write the attempts' outcomes and usage; return the ids whose outcome was
    discarded (lease lost, or cancelled before it finished)."""
    writable = [a for a in attempts if a.verdict is not None]
    discarded = {a.job.pk for a in attempts if a.verdict is None}
    lost = _write(writable, worker_id, stop)
    if logger.isEnabledFor(logging.INFO):
        for attempt in writable:
            if attempt.job.pk not in lost:
                log_attempt(attempt)
        for job_id in sorted(lost):
            logger.info("Job %s: lease lost before its outcome was written; discarded.", job_id)
    return discarded | lost


def _write(attempts: Sequence[Attempt], worker_id: str, stop: threading.Event | None) -> set[int]:
    """Write a batch; return the ids whose lease was lost.

    One batch never shares a fate: when the database refuses it for what it
    carries, it is split in halves and each written apart, down to single rows,
    so only a row the database refuses on its own is affected, and that row
    becomes its job's failed attempt (``_write_refused``). Transient errors (the
    database away) are retried as a whole by ``retry_transient``."""
    if not attempts:
        return set()
    settled = [a.settled(_spent(a.outcome)) for a in attempts]
    try:
        return retry_transient(
            lambda: store.complete_leased_jobs(worker_id, settled),
            "writing job outcomes",
            stop=stop,
        )
    except GaveUp:
        raise
    except Exception as exc:  # noqa: BLE001 - decided per row below
        reset_connection()  # some refusals (a packet too large) drop the session
        if len(attempts) == 1:
            return _write_refused(attempts[0], exc, worker_id, stop)
        logger.warning(
            "The database refused a batch of %d outcome(s) (%s); writing them apart.",
            len(attempts),
            _describe(exc),
        )
        middle = len(attempts) // 2
        return _write(attempts[:middle], worker_id, stop) | _write(
            attempts[middle:], worker_id, stop
        )


def _write_refused(
    attempt: Attempt, error: BaseException, worker_id: str, stop: threading.Event | None
) -> set[int]:
    """The database refused this one outcome: record the attempt as failed with the
    refusal as its error (every text made storable, no return value), then, if
    even that is refused, without its usage row. If nothing can be written the
    outcome is dropped, the lease lapses and reclaim takes the job back."""
    job = attempt.job
    logger.error("Job %s: the database refused its outcome: %s", job.pk, _describe(error))
    mark_unstorable(attempt, f"the database refused this attempt's outcome: {_describe(error)}")
    for spent in (_spent(attempt.outcome), None):
        settled = attempt.settled(spent)
        try:
            return retry_transient(
                lambda s=settled: store.complete_leased_jobs(worker_id, [s]),  # type: ignore[misc]
                "writing a refused outcome",
                stop=stop,
            )
        except GaveUp:
            raise
        except Exception as exc:  # noqa: BLE001
            reset_connection()
            error = exc
    logger.error(
        "Job %s: even its failure could not be written (%s); its lease will lapse.",
        job.pk,
        _describe(error),
    )
    return {job.pk}


def mark_unstorable(attempt: Attempt, reason: str) -> None:
    """Make ``attempt`` a permanent failure whose error is ``reason``: the outcome
    as it was cannot be stored. Its attempt record keeps what it says, made
    storable, with the failure's status and class."""
    assert attempt.verdict is not None
    reason = storable_text(reason, limit=2000)
    record = {
        k: storable_text(v, limit=10_000) if isinstance(v, str) else v
        for k, v in attempt.verdict.record.items()
    }
    record.update(
        status="failed",
        exception_class="dispatch_jobs.exceptions.OutcomeNotStorable",
        message=reason,
    )
    failed = store.Failed(f"OutcomeNotStorable: {reason}", permanent=True)
    attempt.verdict = Verdict(failed, record)


def _describe(error: BaseException) -> str:
    return storable_text(f"{type(error).__name__}: {error}", limit=500)


def _spent(outcome: Outcome) -> store.Spent | None:
    if outcome.kind == Kind.UNSTAGED:
        return None  # the handler never ran: nothing of it to measure
    return store.Spent(
        wall_time=timedelta(seconds=outcome.wall_time),
        cpu_time=timedelta(seconds=outcome.cpu_time),
        executor=outcome.executor,
        peak_rss=outcome.peak_rss,
        disk_written=outcome.disk_written,
    )


class Completer:
    """The completer stage as a thread: takes attempts from a queue, writes them
    in batches, and reports each batch as done through ``on_done(batch,
    discarded)`` (``discarded``: the ids whose outcome was not written)."""

    def __init__(
        self,
        worker_id: str,
        on_done: Callable[[Sequence[Attempt], set[int]], None],
        stop: threading.Event,
    ) -> None:
        self.worker_id = worker_id
        self.on_done = on_done
        self.stop = stop
        self.inbox: queue.SimpleQueue[Attempt | None] = queue.SimpleQueue()
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
        self.on_done(batch, discarded)
