"""The heartbeat: renews every held lease on an interval, cancels the jobs whose
lease was lost, abandons handlers that ignore their timeout, and keeps the
worker's registry row fresh.

A renewal that fails on a transient database error changes nothing: the next
beat tries again, and only the database saying "lease lost" cancels a job.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from django.db import connections
from django.utils import timezone

from .. import store
from .config import WorkerConfig
from .context import LEASE_LOST, STOP_REQUESTED, TIMED_OUT
from .executor import Attempt
from .inflight import Held, Inflight
from .outcomes import Kind, Outcome, settle
from .registry import Registry
from .transient import TRANSIENT_ERRORS, reset_connection

logger = logging.getLogger("dispatch_jobs.worker")


class Heartbeat:
    def __init__(
        self,
        config: WorkerConfig,
        inflight: Inflight,
        registry: Registry,
        on_abandoned: Callable[[Held, Attempt], None],
        on_lost: Callable[[Held], None],
        stop: threading.Event,
    ) -> None:
        self.config = config
        self.inflight = inflight
        self.registry = registry
        self.on_abandoned = on_abandoned
        self.on_lost = on_lost
        self.stop = stop
        # A handler still running this long past its deadline is abandoned.
        self.abandon_after = max(2 * config.heartbeat.total_seconds(), 1.0)
        self.thread = threading.Thread(target=self._run, name="dispatch-heartbeat", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def join(self, timeout: float | None = None) -> None:
        self.thread.join(timeout)

    def _run(self) -> None:
        try:
            while not self.stop.wait(self.interval()):
                try:
                    self.beat()
                except Exception:  # noqa: BLE001 - the next beat must still happen
                    logger.exception("Heartbeat failed; retrying at the next beat.")
                    reset_connection()
        finally:
            connections.close_all()

    def interval(self) -> float:
        """The configured beat, or faster when a held job's own lease is short: a
        lease must be renewed well inside its TTL, whatever ``--heartbeat`` says."""
        beat = self.config.heartbeat.total_seconds()
        shortest = min((held.ttl.total_seconds() for held in self.inflight), default=beat * 3)
        return max(min(beat, shortest / 3), 0.05)

    def beat(self) -> None:
        self.enforce_timeouts()
        self.renew()
        self.registry.touch()

    def renew(self) -> None:
        held = list(self.inflight)
        if not held:
            return
        leases = [(h.job.pk, h.epoch, h.ttl) for h in held]
        try:
            lost = store.renew_leases(self.config.worker_id, leases)
        except TRANSIENT_ERRORS as exc:
            logger.warning("Lease renewal failed (database unavailable, will retry): %s", exc)
            reset_connection()
            return
        for entry in held:
            if entry.job.pk in lost:
                self.lose(entry)
        self.stop_requested([entry for entry in held if entry.job.pk not in lost])

    def stop_requested(self, held: list[Held]) -> None:
        """Stop the handlers of jobs an operator cancelled while they ran: their
        context reports the cancellation (in-process, stopping is cooperative, as
        with timeouts) and the outcome is written as cancelled."""
        running = [entry for entry in held if not entry.cancellation.is_set()]
        if not running:
            return
        asked = store.cancel_requests(self.config.worker_id, [e.job.pk for e in running])
        for entry in running:
            if entry.job.pk in asked:
                by = asked[entry.job.pk]
                logger.info("Job %s: cancel requested by %s; stopping it.", entry.job.pk, by)
                entry.cancellation.cancel(STOP_REQUESTED, by)

    def lose(self, entry: Held) -> None:
        """The lease moved on: cancel the handler and discard its outcome. An outcome
        already handed to the completer is refused there by the fence instead."""
        entry.cancellation.cancel(LEASE_LOST)
        if entry.drop():
            logger.warning(
                "Job %s: lease lost (reclaimed elsewhere); cancelling it and discarding "
                "its outcome.",
                entry.job.pk,
            )
            self.on_lost(entry)

    def enforce_timeouts(self) -> None:
        now = time.monotonic()
        for entry in self.inflight:
            if entry.deadline is None or now < entry.deadline:
                continue
            entry.cancellation.cancel(TIMED_OUT)
            if entry.isolated:
                continue  # its supervising thread kills the child at the deadline
            if now >= entry.deadline + self.abandon_after and entry.finish():
                self.on_abandoned(entry, self._abandoned(entry))

    def _abandoned(self, entry: Held) -> Attempt:
        """A timeout outcome written on the handler's behalf: it ignored its
        deadline, and an in-process thread cannot be stopped from outside."""
        job = entry.job
        finished = timezone.now()
        outcome = Outcome(
            kind=Kind.TIMEOUT,
            started_at=job.started_at or finished,
            finished_at=finished,
            wall_time=(finished - (job.started_at or finished)).total_seconds(),
            exception_class="dispatch_jobs.exceptions.JobTimedOut",
            message=(
                f"still running {self.abandon_after:g}s after its timeout; abandoned "
                "(in-process execution cannot stop the thread)"
            ),
        )
        logger.warning("Job %s ignored its timeout; recorded as timed out.", job.pk)
        return Attempt(job, entry.epoch, outcome, settle(job, outcome, self.config.worker_id))
