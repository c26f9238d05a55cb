"""The worker's row in the registry: registered on start, touched by the
heartbeat (and registered again if it was removed as stale), marked draining,
removed on exit. Each touch also writes whether the worker's claims are failing
(``health.ClaimHealth``), so the admin can show it unhealthy. Best-effort
throughout: the registry is for operators, and a database hiccup here must never
stop a worker from running its jobs."""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable
from datetime import timedelta

from .. import store
from ..models import WorkerState
from .config import WorkerConfig
from .health import ClaimHealth
from .transient import reset_connection

logger = logging.getLogger("dispatch_jobs.worker")


class Registry:
    def __init__(self, config: WorkerConfig, claims: ClaimHealth | None = None) -> None:
        self.config = config
        self.claims = claims
        self.state = WorkerState.ACTIVE

    def register(self) -> None:
        self._safely("registering", self._register)

    def touch(self) -> None:
        def touch() -> None:
            failure = self.claims.failure() if self.claims else None
            if failure is None:
                touched = store.touch_worker(self.config.worker_id)
            else:
                touched = store.touch_worker(
                    self.config.worker_id,
                    claim_error=failure.error,
                    failing_for=timedelta(seconds=failure.failing_for),
                )
            if not touched:
                self._register()

        self._safely("touching the worker row", touch)

    def draining(self) -> None:
        self.state = WorkerState.DRAINING
        self._safely(
            "marking the worker draining",
            lambda: store.set_worker_state(self.config.worker_id, WorkerState.DRAINING),
        )

    def deregister(self) -> None:
        self._safely("deregistering", lambda: store.deregister_worker(self.config.worker_id))

    def _register(self) -> None:
        store.register_worker(
            self.config.worker_id,
            hostname=socket.gethostname(),
            pid=os.getpid(),
            queues=list(self.config.queues),
            concurrency=self.config.concurrency,
            capacity=self.config.budget,
            execution=self.config.execution,
        )
        if self.state != WorkerState.ACTIVE:
            store.set_worker_state(self.config.worker_id, self.state)

    @staticmethod
    def _safely(what: str, action: Callable[[], object]) -> None:
        try:
            action()
        except Exception as exc:  # noqa: BLE001 - see the module docstring
            logger.warning("Worker registry: failed %s: %s", what, exc)
            # A connection the server dropped (a restart) stays broken until
            # closed; the heartbeat's renewals close theirs only when there is
            # a lease to renew, so an idle worker's touches would fail forever
            # and its row, removed as stale, never come back.
            reset_connection()
