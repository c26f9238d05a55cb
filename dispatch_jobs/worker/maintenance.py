"""Maintenance runners, run by one elected worker at a time.

The seed's periodic runners, each with enabled / interval / retention settings:
lease reclaim (crash recovery and poison protection), the purge of finished jobs
past their retention, usage retention, and removal of stale worker rows; and the
firing of periodic schedules (``scheduler.fire_due_schedules``) at every tick. The
election is a database lease (``store.acquire_leadership``), not a process-local
flag, so ten workers do not each run them; when the leader dies its lease lapses
and another worker takes over within a few intervals.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from django.db import connections

from .. import database, scheduler, store
from ..conf import settings
from .config import WorkerConfig
from .transient import TRANSIENT_ERRORS, reset_connection

logger = logging.getLogger("dispatch_jobs.worker")

LEADERSHIP = "dispatch_jobs.maintenance"
BATCH = 1000
MAX_ROUNDS = 20  # per run, so one huge backlog cannot monopolise the leader


@dataclass
class Runner:
    name: str
    enabled: bool
    interval: float
    run: Callable[[], int]
    next_at: float = 0.0  # due at once on the first tick


class Maintenance:
    def __init__(self, config: WorkerConfig, stop: threading.Event) -> None:
        self.config = config
        self.stop = stop
        self.tick = config.reclaim_interval.total_seconds()
        self.leadership_ttl = timedelta(seconds=max(3 * self.tick, 1.0))
        self.is_leader = False
        self.runners = [
            Runner("reclaim", settings.reclaim_enabled, self.tick, self.reclaim),
            Runner("stale-workers", True, self.tick, self.remove_stale_workers),
            Runner("rollup", True, self.tick, store.roll_up_finished_jobs),
            Runner("schedules", True, self.tick, self.fire_schedules),
            Runner(
                "purge",
                settings.purge_enabled,
                settings.purge_interval.total_seconds(),
                self.purge_jobs,
            ),
            Runner(
                "schedule-ticks",
                settings.purge_enabled,
                settings.purge_interval.total_seconds(),
                self.purge_schedule_ticks,
            ),
            Runner(
                "usage-retention",
                settings.usage_purge_enabled,
                settings.usage_purge_interval.total_seconds(),
                self.purge_usage,
            ),
        ]
        self.thread = threading.Thread(target=self._run, name="dispatch-maintenance", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def join(self, timeout: float | None = None) -> None:
        if self.thread.is_alive():
            self.thread.join(timeout)

    def _run(self) -> None:
        try:
            while True:
                try:
                    self.run_once()
                except Exception:  # noqa: BLE001 - one bad tick must not end maintenance
                    logger.exception("Maintenance tick failed; retrying at the next tick.")
                    reset_connection()
                if self.stop.wait(self.tick):
                    break
            if self.is_leader:
                # Hand the duty over at once rather than after the lease lapses.
                store.release_leadership(LEADERSHIP, self.config.worker_id)
        except Exception:  # noqa: BLE001 - the worker is stopping anyway
            logger.warning("Could not release the maintenance leadership.", exc_info=True)
        finally:
            connections.close_all()

    def run_once(self) -> None:
        """One tick: (re)take the leadership, then run every runner that is due."""
        try:
            leader = store.acquire_leadership(
                LEADERSHIP, self.config.worker_id, self.leadership_ttl
            )
        except TRANSIENT_ERRORS as exc:
            logger.warning("Maintenance: leadership check failed (will retry): %s", exc)
            reset_connection()
            return
        if leader != self.is_leader:
            logger.info("Maintenance: %s the leader.", "now" if leader else "no longer")
        self.is_leader = leader
        if not leader:
            return
        now = time.monotonic()
        for runner in self.runners:
            if runner.enabled and now >= runner.next_at:
                runner.next_at = now + runner.interval
                self._run_runner(runner)

    def _run_runner(self, runner: Runner) -> None:
        try:
            count = runner.run()
        except TRANSIENT_ERRORS as exc:
            logger.warning("Maintenance %s failed (will retry): %s", runner.name, exc)
            reset_connection()
            runner.next_at = 0.0
            return
        except Exception:  # noqa: BLE001 - one runner's failure must not stop the others
            # Whatever it met (a row no driver reads back, a bug), the runners after
            # it in this tick still run; this one runs again at its next interval.
            logger.exception("Maintenance %s failed; the other runners go on.", runner.name)
            reset_connection()
            return
        if count:
            logger.info("Maintenance %s: %d row(s).", runner.name, count)

    def reclaim(self) -> int:
        total = 0
        for _ in range(MAX_ROUNDS):
            reclaimed = store.reclaim_expired_leases(BATCH, max_evictions=self.config.max_evictions)
            for job in reclaimed:
                if job.state == "failed":
                    logger.warning("Job %s failed as poison: %s", job.pk, job.last_error)
            total += len(reclaimed)
            if len(reclaimed) < BATCH:
                break
        return total

    def fire_schedules(self) -> int:
        # A tick is late by up to one maintenance tick, more at a leadership
        # handover: the grace keeps such ticks on time rather than "missed".
        grace = max(scheduler.MIN_GRACE, timedelta(seconds=4 * self.tick))
        return scheduler.fire_due_schedules(grace)

    def purge_schedule_ticks(self) -> int:
        before = database.database_now() - settings.completed_retention
        return store.purge_schedule_ticks(before, BATCH)

    def remove_stale_workers(self) -> int:
        return store.remove_stale_workers(settings.worker_stale_after)

    def purge_jobs(self) -> int:
        total = 0
        for _ in range(MAX_ROUNDS):
            removed = store.purge_finished_jobs(
                completed_retention=settings.completed_retention,
                failed_retention=settings.failed_retention,
                limit=BATCH,
            )
            total += removed
            if removed < BATCH:
                break
        return total

    def purge_usage(self) -> int:
        before = database.database_now() - settings.usage_retention
        total = 0
        for _ in range(MAX_ROUNDS):
            removed = store.purge_usage(before, BATCH)
            total += removed
            if removed < BATCH:
                break
        return total
