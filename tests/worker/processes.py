"""Real ``runjobs`` processes for the crash tests, on the test database."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from django.db import connection

ROOT = Path(__file__).resolve().parents[2]
# Short leases so crash recovery is quick; a heartbeat well inside the TTL.
FAST = [
    "--lease-ttl",
    "2",
    "--heartbeat",
    "0.5",
    "--poll-interval",
    "0.05",
    "--max-poll-interval",
    "0.2",
    "--maintenance-interval",
    "0.5",
]


# How long a test waits for a worker process before it fails: generous, because the
# suite may share its cores with parallel xdist workers and other processes. Waiting
# ends as soon as the condition holds, so the budget costs nothing when all is well.
PATIENCE = 180.0


def wait_until(predicate: Callable[[], object], timeout: float = PATIENCE, what: str = "") -> None:
    """Poll ``predicate`` until it is true; fail after ``timeout`` seconds."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what or predicate}")


class WorkerProcess:
    """``python -m django runjobs ...`` against the test database."""

    def __init__(self, log_dir: Path, *args: str, env: dict[str, str] | None = None) -> None:
        env = {**os.environ, **(env or {})}
        env["DJANGO_SETTINGS_MODULE"] = "tests.settings"
        env["DISPATCH_TEST_DB_NAME"] = str(connection.settings_dict["NAME"])
        env["PYTHONPATH"] = str(ROOT)
        self.log_path = log_dir / f"worker-{time.monotonic_ns()}.log"
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "django", "runjobs", "-v", "2", *args],
            cwd=ROOT,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def send(self, signum: int) -> None:
        self.proc.send_signal(signum)

    def wait(self, timeout: float = PATIENCE) -> int:
        return self.proc.wait(timeout)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.alive():
            self.proc.send_signal(signal.SIGCONT)
            self.proc.kill()
            self.proc.wait(30)
        self._log.close()
