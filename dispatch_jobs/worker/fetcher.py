"""The fetcher: one claim per cycle for as many jobs as there are free slots,
the lease granted inside the claim."""

from __future__ import annotations

import logging
import threading

from .. import store
from ..models import Job
from .config import WorkerConfig
from .inflight import Inflight, free_budget
from .transient import retry_transient

logger = logging.getLogger("dispatch_jobs.worker")


class Fetcher:
    def __init__(self, config: WorkerConfig, inflight: Inflight, stop: threading.Event) -> None:
        self.config = config
        self.inflight = inflight
        self.stop = stop

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
        overcommit it, so the fetcher re-measures the free budget between claims."""
        if limit <= 0:
            return []
        if self.config.budget:
            limit = 1
        budget, custom_keys = free_budget(self.config.budget, self.inflight.in_use())
        options = store.ClaimOptions(
            queues=list(self.config.queues),
            every_queue=self.config.served.every,
            limit=limit,
            budget=budget or None,
            custom_keys=custom_keys,
            worker_id=self.config.worker_id,
            lease_ttl=self.config.lease_ttl,
        )
        jobs = retry_transient(lambda: store.claim_jobs(options), "claiming jobs", stop=self.stop)
        if jobs:
            logger.debug("Claimed %d job(s): %s", len(jobs), ", ".join(str(j.pk) for j in jobs))
        return jobs
