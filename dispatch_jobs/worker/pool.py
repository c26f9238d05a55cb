"""The worker pool: fetch → execute → complete, with a heartbeat and maintenance.

Threads and what they own:

- the main thread runs the fetch loop (one claim per cycle for the free slots)
  and the drain;
- ``concurrency`` executor threads (``executors.Executors``) take claimed jobs
  from a queue and run them (``executor.execute``), each with its own database
  connection, kept from job to job and closed when the worker stops;
- the completer thread writes outcomes behind the lease fence, in batches;
- the heartbeat thread renews every held lease and cancels lost ones;
- the maintenance thread runs the elected runners; the listener thread (on
  PostgreSQL) wakes the fetch loop on NOTIFY.

A slot is taken from claim until the handler returns; the lease is held (and
renewed by the heartbeat) until the outcome is safely stored or the job dropped.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Sequence

from django.db import connections

from .. import rungs
from ..exceptions import GaveUp
from ..models import Job, JobState
from . import handback, startup
from . import metrics as worker_metrics
from .children import Children
from .completer import Completer
from .config import WorkerConfig
from .decode import lease_ttl_of
from .executor import Attempt, deadline_for, execute
from .executors import Executors
from .fetcher import Fetcher
from .health import ClaimHealth
from .heartbeat import Heartbeat
from .inflight import Held, Inflight
from .isolated import Supervisor
from .ledger import Ledger
from .maintenance import Maintenance
from .pacing import Listener, Pacer
from .registry import Registry
from .shutdown import Shutdown
from .staging import ArtifactCache
from .summary import Stats, Summary, banner
from .transient import reset_connection

logger = logging.getLogger("dispatch_jobs.worker")

# How long the last writes may take at exit before the worker gives up on them
# (their leases then expire and the jobs are reclaimed: nothing is lost).
FINAL_WRITE_TIMEOUT = 30.0


class Pool:
    """One ``runjobs`` worker. ``run()`` blocks until it is done; returns 0."""

    def __init__(self, config: WorkerConfig) -> None:
        self.config = config
        self.stop = threading.Event()  # stops the background stages
        self.wake = threading.Event()  # a slot was freed, a job enqueued, a signal
        self.shutdown = Shutdown(self.wake)
        self.inflight = Inflight()
        self.stats = Stats()
        self.summary = Summary(self.stats, config.summary_interval.total_seconds())
        # The fetcher reports failing claims; the registry's touch publishes them.
        self.claims = ClaimHealth(config.heartbeat.total_seconds())
        self.registry = Registry(config, self.claims)
        self.pacer = Pacer(config.poll_interval, config.max_poll_interval)
        # The inputs staged here; its hashes are offered to every claim (locality).
        self.cache = ArtifactCache.from_settings(config.worker_id)
        # A claim stuck on an unreachable database gives up once a drain starts.
        self.ledger = Ledger(config.budget)
        self.fetcher = Fetcher(
            config,
            self.inflight,
            self.shutdown.draining,
            self.claims,
            self.cache,
            self.ledger.unfit,
        )
        self.completer = Completer(config.worker_id, self._on_done, self.stop)
        self.heartbeat = Heartbeat(
            config, self.inflight, self.registry, self._on_abandoned, self._on_lost, self.stop
        )
        self.maintenance = Maintenance(config, self.stop) if config.maintenance else None
        self.listener = Listener(config.queues, self.wake, self.stop)
        self.executors = Executors(config.concurrency, self._execute)
        # The subprocess rung: every handler runs in a supervised child process.
        self.children: Children | None = None
        self.supervisor: Supervisor | None = None
        if config.execution == rungs.SUBPROCESS:
            self.children = Children(config.child_max_jobs, config.child_max_rss)
            self.supervisor = Supervisor(
                self.children,
                config.worker_id,
                config.child_kill_grace.total_seconds(),
                self.cache,
            )
        self.dispatched = 0
        # Claim again when this few claimed jobs still wait for a thread (see
        # _wants_jobs). A budget claims one job at a time and prefetches none.
        self.refill_at = 0 if config.budget else config.prefetch // 2
        self.deadline: float | None = None  # monotonic end of a signalled drain's grace
        # None unless --metrics-port: then the hot path's only cost is the test.
        self.metrics = worker_metrics.start(config, self.inflight.__len__, self._is_leader)

    # --- lifecycle -------------------------------------------------------------

    def run(self) -> int:
        logger.info(banner(self.config))
        self.registry.register()
        startup.sync_at_start()
        if self.children is not None:
            self.children.prewarm(self.config.concurrency)
        self.executors.start()
        self.completer.start()
        self.heartbeat.start()
        if self.maintenance:
            self.maintenance.start()
        self.listener.start()
        try:
            self._fetch_loop()
            self._drain()
        finally:
            self._stop_stages()
            connections.close_all()
            if self.metrics is not None:
                self.metrics.close()
        logger.info("runjobs %s stopped: %s", self.config.worker_id, self.stats.line(0))
        return 0

    def _fetch_loop(self) -> None:
        while not self.shutdown.draining.is_set():
            # Clear before looking at the slots: whatever set the event is being
            # handled by this pass, and a set that comes later still ends the wait
            # below. Clearing only when slots were free left the event set while
            # the pool was full, and the loop spun on the GIL instead of waiting.
            self.wake.clear()
            self.summary.maybe_log(len(self.inflight))
            if self._quota_reached():
                return
            free = self.fetcher.free_slots() if self._wants_jobs() else 0
            delay = self.config.max_poll_interval.total_seconds()
            if free:
                try:
                    jobs = self.fetcher.fetch(self._limit(free))
                except GaveUp:
                    return
                except Exception:  # noqa: BLE001 - a failing claim must not end the worker
                    if self.config.burst:
                        raise  # a bounded run reports it rather than retrying forever
                    logger.exception("Claiming jobs failed; trying again shortly.")
                    reset_connection()
                    self.wake.wait(self.pacer.idle())
                    continue
                for job in jobs:
                    self._dispatch(job)
                if jobs:
                    self.pacer.busy()
                    continue  # poll again at once
                if self.config.burst and not len(self.inflight):
                    logger.info("Burst: nothing left that is ready.")
                    return
                delay = self.pacer.idle()
            self.wake.wait(delay)

    def _wants_jobs(self) -> bool:
        """Whether a claim is due: the claimed jobs still waiting for a thread are
        down to the refill mark (half the prefetch). Refilling at every freed slot
        made claims of a few jobs each, one statement (and one wake of this loop)
        per handful of jobs; refilling in halves claims hundreds at a time while
        the threads never run dry. Without prefetch the mark is 0: a claim is due
        as soon as nothing waits, as before."""
        return self.executors.waiting() <= self.refill_at

    def _wake(self) -> None:
        """Wake the fetch loop for a refill, once: ``Event.set`` takes the event's
        lock and notifies on every call, and past the refill mark every started
        and every settled job asks. Skipping it while the event is still set is
        the same as setting it again: the loop clears the event before it looks
        at the slots, so it sees whatever changed before this call."""
        if not self.wake.is_set():
            self.wake.set()

    def _quota_reached(self) -> bool:
        return self.config.max_jobs is not None and self.dispatched >= self.config.max_jobs

    def _limit(self, free: int) -> int:
        if self.config.max_jobs is None:
            return free
        return min(free, self.config.max_jobs - self.dispatched)

    # --- execute ---------------------------------------------------------------

    def _dispatch(self, job: Job) -> None:
        held = Held(
            job=job,
            epoch=job.lease_epoch,
            ttl=lease_ttl_of(job, self.config.lease_ttl),
            isolated=self.supervisor is not None,
        )
        self.inflight.add(held)
        self.dispatched += 1
        self.stats.count("dispatched")
        if not self.ledger.fits_at_all(held):
            if handback.hand_back_unfit(held, self.config.worker_id, self.shutdown.draining):
                self._forget(held)
            return
        self.executors.submit(held)

    def _execute(self, held: Held) -> None:
        """Run one held job on an executor thread (its connection is the thread's)."""
        # A drain starts nothing new: a job still waiting for a thread is handed back.
        if self.shutdown.draining.is_set() or not held.start():
            return
        if self._wants_jobs():
            # Taking this job may have brought the waiting ones down to the mark
            # while a slot freed earlier went unannounced (see _wants_jobs).
            self._wake()
        # Its custom-key units are free beside the jobs already running (see ledger).
        self.ledger.admit(held)
        # The timeout counts from the start of the handler, not from the claim.
        held.deadline = deadline_for(held.job)
        if self.metrics is not None:
            self.metrics.started(held.job)
        attempt: Attempt | None = None
        try:
            if self.supervisor is not None:
                attempt = self.supervisor.run(held)
            else:
                attempt = execute(
                    held.job, self.config.worker_id, held.cancellation, held.deadline, self.cache
                )
        except BaseException:  # noqa: BLE001 - a bug here must not kill the worker
            logger.exception("Job %s: the executor failed; its lease will lapse.", held.job.pk)
        self.ledger.release(held)
        if attempt is not None and held.finish():
            self.completer.submit(attempt)
            if self._wants_jobs():
                self._wake()  # the slot is free for a new claim
        elif attempt is None and held.drop():
            self._forget(held)
        else:
            logger.debug("Job %s: outcome discarded (lease lost or handed back).", held.job.pk)

    def _on_done(self, attempts: Sequence[Attempt], discarded: set[int]) -> None:
        """The completer wrote a batch of outcomes (or discarded those in
        ``discarded``): free their slots, under one lock for the whole batch."""
        self.inflight.settle((attempt.job.pk, attempt.epoch) for attempt in attempts)
        tally: Counter[str] = Counter()
        for attempt in attempts:
            written = attempt.job.pk not in discarded
            if self.metrics is not None and written:
                self.metrics.settled(attempt)
            tally[_counter(attempt, written)] += 1
        self.stats.add(tally)
        if self._wants_jobs():
            self._wake()  # held slots are free (a waiting burst may be over)

    def _is_leader(self) -> bool:
        return self.maintenance is not None and self.maintenance.is_leader

    def _on_abandoned(self, held: Held, attempt: Attempt) -> None:
        """The heartbeat recorded a timeout for a handler that ignored it: write the
        outcome, and replace the executor thread the handler still occupies."""
        self.completer.submit(attempt)
        self.executors.replace_stuck(held)
        self.wake.set()

    def _on_lost(self, held: Held) -> None:
        self._forget(held)
        self.stats.count("discarded")

    def _forget(self, held: Held) -> None:
        self.inflight.remove(held)
        self.wake.set()

    # --- drain -----------------------------------------------------------------

    def _drain(self) -> None:
        """Stop claiming; let running jobs finish (within the grace period when
        stopped by a signal); hand back what is left."""
        if not self.shutdown.draining.is_set():
            # Burst or --max-jobs: finish everything, unless a signal comes meanwhile.
            while len(self.inflight) and not self.shutdown.draining.is_set():
                self.inflight.wait_empty(0.2)
            if not len(self.inflight):
                return
        self.registry.draining()
        grace_end = time.monotonic() + self.config.shutdown_grace.total_seconds()
        # Stopped by a signal: the hand-back and the last writes share what is left
        # of the grace (with a floor of one second each), database up or down.
        self.deadline = grace_end
        # Wait for the started jobs only: prefetched ones are handed back unstarted.
        while self.inflight.busy() and not self.shutdown.hurry.is_set():
            left = grace_end - time.monotonic()
            if left <= 0:
                break
            self.inflight.wait_empty(min(left, 0.05))
        handback.hand_back(self.inflight, self.config.worker_id, self._write_budget())

    def _stop_stages(self) -> None:
        # Outcomes already handed to the completer are written first, while the
        # heartbeat still renews their leases; then everything else stops.
        self.completer.close(self._write_budget())
        self.stop.set()
        # Handlers still running here ignored the grace and their cancellation.
        self.executors.stop(1.0)
        if self.children is not None:
            self.children.close()
        self.heartbeat.join(self._write_budget(5.0))
        if self.maintenance:
            self.maintenance.join(self._write_budget(5.0))
        self.listener.join(self._write_budget(5.0))
        self.registry.deregister()

    def _write_budget(self, most: float = FINAL_WRITE_TIMEOUT) -> float:
        """How long a last write (or a stage's exit) may take: ``most``, or, when a
        signal started the drain, what is left of the grace, at least a second."""
        if self.deadline is None:
            return most
        return min(most, max(self.deadline - time.monotonic(), 1.0))


def _counter(attempt: Attempt, written: bool) -> str:
    """The summary's counter an attempt's written (or discarded) outcome adds to."""
    state = attempt.verdict.state if attempt.verdict else None
    if not written:
        return "discarded"
    if state == JobState.COMPLETED:
        return "completed"
    if state == JobState.RETRYING:
        return "retried"
    return "failed"
