"""The fetcher: one claim per cycle for as many jobs as there are free slots,
the lease granted inside the claim, offering the hashes of the inputs this
worker has staged (locality: such jobs sort first within their priority band)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from typing import Literal

from .. import rungs, store
from ..models import Job
from .config import WorkerConfig
from .health import ClaimHealth
from .inflight import Inflight, free_budget
from .staging import ArtifactCache
from .transient import retry_transient

logger = logging.getLogger("dispatch_jobs.worker")


class Fetcher:
    def __init__(
        self,
        config: WorkerConfig,
        inflight: Inflight,
        stop: threading.Event,
        claims: ClaimHealth | None = None,
        cache: ArtifactCache | None = None,
        unfit: Sequence[int] = (),
    ) -> None:
        self.config = config
        self.cache = cache
        self.inflight = inflight
        self.stop = stop
        self.alone: int | None = None  # the suspect running alone here, if any
        self.suspects = False  # whether suspects were waiting at the last probe
        self.next_probe = 0.0  # monotonic time of the next probe (0: at once)
        self.probe_interval = config.heartbeat.total_seconds()
        self.claims = claims or ClaimHealth(config.heartbeat.total_seconds())
        self.unfit = unfit  # jobs handed back as too big for this worker (ledger)

    def free_slots(self) -> int:
        """Slots for new claims: ``concurrency`` threads plus ``prefetch`` jobs
        waiting for one (claimed, leased and renewed, not started). A job whose
        handler has returned frees its slot at once, while its outcome waits for
        the completer (its lease still renewed); at most as many such outcomes
        may wait, which bounds the leases held to twice the slots when the
        database is slow. With a budget there is no prefetch: a job waiting for
        a thread would hold budget it does not use yet."""
        slots = self.config.concurrency
        if not self.config.budget:
            slots += self.config.prefetch
        held = len(self.inflight)
        return max(min(slots - self.inflight.executing(), 2 * slots - held), 0)

    def fetch(self, limit: int) -> list[Job]:
        """Claim up to ``limit`` jobs. With a budget, one job per claim: each
        claimed job fits the budget on its own, but two claimed together could
        overcommit it, so the fetcher re-measures the free budget between claims.

        Poison attribution: a suspect (a job whose lease lapsed, perhaps because
        its worker died of a job beside it) runs alone. While suspects wait, this
        worker stops filling shared slots, lets its running jobs finish, and then
        claims one suspect to run with nothing beside it; a worker with a single
        slot runs every job alone anyway, suspects included."""
        if limit <= 0:
            return []
        if self.contained:
            # A child that dies fails its own job and nothing else here: suspects
            # need no lone run, and this worker's slots stay full.
            return self._claim(1 if self.config.budget else limit, suspects="include", alone=False)
        if self.single_slot:
            return self._claim(1, suspects="include", alone=True)
        if self.alone is not None:
            if self.inflight.get(self.alone) is not None:
                return []  # a job runs alone here: nothing beside it
            self.alone = None
        if self._suspects_waiting():
            if len(self.inflight):
                # The pool empties first, outcomes written included: a suspect
                # that kills this process must not take a finished neighbour's
                # unwritten outcome with it (the neighbour would run again).
                return []
            if jobs := self._claim_alone():
                return jobs
        jobs = self._claim(1 if self.config.budget else limit, suspects="exclude", alone=False)
        if not jobs and not len(self.inflight):
            # Idle (or a burst about to end): a suspect may be all that is left.
            self.next_probe = 0.0
            if self._suspects_waiting():
                return self._claim_alone()
        return jobs

    @property
    def contained(self) -> bool:
        """Every handler runs in a child process (the subprocess rung)."""
        return self.config.execution == rungs.SUBPROCESS

    @property
    def single_slot(self) -> bool:
        """One thread and nothing prefetched: whatever runs here runs alone."""
        return self.config.concurrency == 1 and (
            bool(self.config.budget) or not self.config.prefetch
        )

    def _suspects_waiting(self) -> bool:
        """Looked up at most once per probe interval (a small partial index)."""
        now = time.monotonic()
        if now >= self.next_probe:
            self.next_probe = now + self.probe_interval
            self.suspects = retry_transient(
                lambda: store.suspects_waiting(
                    list(self.config.queues),
                    every_queue=self.config.served.every,
                    executions=self.config.executions,
                ),
                "looking for suspect jobs",
                stop=self.stop,
            )
        return self.suspects

    def _preferred(self) -> tuple[str, ...]:
        """The cached hashes worth offering (``staging.PREFER_HASHES_MAX``, largest
        first), sorted: the claim statement is compiled once per distinct offer
        (``ReturningClaims``), and a sorted offer repeats while the cache holds
        the same files."""
        if self.cache is None:
            return ()
        return tuple(sorted(self.cache.preferred_hashes()))

    def _claim_alone(self) -> list[Job]:
        jobs = self._claim(1, suspects="only", alone=True)
        if jobs:
            self.alone = jobs[0].pk
            logger.info("Job %s runs alone: its lease lapsed on a worker that died.", jobs[0].pk)
        else:
            self.suspects = False  # taken by another worker meanwhile
        return jobs

    def _claim(
        self, limit: int, *, suspects: Literal["include", "exclude", "only"], alone: bool
    ) -> list[Job]:
        budget, custom_keys = free_budget(self.config.budget, self.inflight.in_use())
        options = store.ClaimOptions(
            queues=list(self.config.queues),
            every_queue=self.config.served.every,
            limit=limit,
            budget=budget or None,
            custom_keys=custom_keys,
            prefer_hashes=self._preferred(),
            worker_id=self.config.worker_id,
            lease_ttl=self.config.lease_ttl,
            suspects=suspects,
            alone=alone,
            executions=self.config.executions,
            skip=tuple(self.unfit),
        )

        def claim() -> list[Job]:
            try:
                return store.claim_jobs(options)
            except Exception as exc:  # transient ones are retried, others raised to the pool
                self.claims.failed(exc)  # logged as an ERROR when it persists
                raise

        jobs = retry_transient(claim, "claiming jobs", stop=self.stop)
        self.claims.succeeded()
        if jobs:
            logger.debug("Claimed %d job(s): %s", len(jobs), ", ".join(str(j.pk) for j in jobs))
        return jobs
