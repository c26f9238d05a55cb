"""What the scenarios need from a system: enqueue, workers, and database probes."""

from __future__ import annotations

import os
import sys
from abc import ABC, abstractmethod
from pathlib import Path

from ..databases import FILL_ANALYZE, analyze, database_url
from ..processes import ROOT, WorkerProcess

# Worker modes every system maps onto its own CLI flags (``worker_argv``):
#   default - drain: the documented defaults, nothing tuned (exits when the
#             queue is empty where the CLI has such a switch)
#   tuned   - drain: the settings this bench documents as tuned for no-op jobs
#   serve   - stay up, documented defaults (the idle-latency scenario)
#   poll    - stay up, LISTEN/NOTIFY off where the system has it
#   c32     - stay up, concurrency 32 (the memory scenario)
MODES = ("default", "tuned", "serve", "poll", "c32")


class Unsupported(Exception):
    """The system has no way to do what a scenario asks (reported as n/a)."""


class System(ABC):
    """One benchmarked system on one database vendor."""

    name: str = ""
    vendors: tuple[str, ...] = ("postgres",)
    #: What each worker mode means for this system, for the report.
    modes: dict[str, str] = {}

    def __init__(self, vendor: str) -> None:
        if vendor not in self.vendors:
            raise Unsupported(f"{self.name} does not run on {vendor}")
        self.vendor = vendor
        self.url = database_url(vendor, self.name)

    # -- set-up -------------------------------------------------------------

    @abstractmethod
    def prepare(self) -> None:
        """Make the database fresh (drop/create) and install the schema."""

    def close(self) -> None:  # noqa: B027 - optional hook, most systems need it
        """Close this process's connections (before the database is dropped)."""

    def notes(self) -> dict[str, str]:
        """Facts about this run worth printing (API used, versions)."""
        return {}

    # -- enqueue --------------------------------------------------------------

    @abstractmethod
    def enqueue_single(self, count: int) -> dict[str, float]:
        """Enqueue ``count`` jobs one call (one transaction) each; jobs/s by API."""

    @abstractmethod
    def enqueue_bulk(self, count: int, batch: int) -> dict[str, float]:
        """Enqueue ``count`` jobs with the bulk API, ``batch`` per call; jobs/s."""

    @abstractmethod
    def fill(self, count: int) -> None:
        """Enqueue ``count`` no-op jobs as fast as possible (set-up, not measured)."""

    def filled(self, count: int) -> None:
        """``fill(count)``, then, unless ``BENCH_FILL_ANALYZE=0``, the database's
        planner statistics brought up to date (see ``databases.FILL_ANALYZE``):
        every drain starts from the same state whatever the system."""
        self.fill(count)
        if FILL_ANALYZE:
            analyze(self.url)

    @abstractmethod
    def enqueue_one(self) -> None:
        """Enqueue one no-op job through the public API (the latency scenario)."""

    # -- workers ------------------------------------------------------------

    @abstractmethod
    def worker_argv(self, mode: str) -> list[str]:
        """The worker's command line in ``mode`` (see MODES)."""

    def worker_env(self, mode: str) -> dict[str, str]:
        env = dict(os.environ)
        env["PYTHONPATH"] = str(ROOT)
        env["PYTHONUNBUFFERED"] = "1"
        return env

    def start_worker(self, mode: str, tag: str) -> WorkerProcess:
        return WorkerProcess(
            self.worker_argv(mode), self.worker_env(mode), f"{self.name}-{self.vendor}-{tag}"
        )

    def python(self) -> str:
        return sys.executable

    def bin(self, name: str) -> str:
        return str(Path(sys.executable).parent / name)

    # -- probes (database side) ----------------------------------------------

    @abstractmethod
    def finished(self) -> int:
        """How many jobs completed successfully."""

    @abstractmethod
    def failed(self) -> int:
        """How many jobs ended in failure (a bench run expects none)."""

    @abstractmethod
    def finish_span(self) -> tuple[float, float] | None:
        """Epoch seconds of the first and last successful completion."""

    @abstractmethod
    def latencies(self) -> list[float]:
        """Per job, in id order: seconds from enqueue to start, by the database's
        record of both moments."""
