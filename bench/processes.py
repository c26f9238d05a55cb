"""Worker processes started by the bench: start, watch memory, stop.

Each worker runs as a real process with its own CLI, in its own session, with
its output going to a log file (never a pipe a full buffer could block). The
bench stops only processes it started, by their id.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOG_DIR = ROOT / "bench" / "results" / "logs"


class WorkerProcess:
    """One worker process (and whatever children it forks)."""

    def __init__(self, argv: Sequence[str], env: Mapping[str, str], log_name: str) -> None:
        LOG_DIR.mkdir(parents=True, exist_ok=True)
        self.argv = list(argv)
        self.log_path = LOG_DIR / f"{log_name}.log"
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        self._log.write(f"\n$ {' '.join(self.argv)}\n".encode())
        self._log.flush()
        self.proc = subprocess.Popen(
            self.argv,
            cwd=ROOT,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.peak_rss = 0

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def sample_rss(self) -> int:
        """Resident memory of the process and its descendants, in bytes; keeps
        the peak seen so far in ``peak_rss``."""
        total = sum(_rss_of(pid) for pid in [self.pid, *_descendants(self.pid)])
        self.peak_rss = max(self.peak_rss, total)
        return total

    def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the process to exit by itself."""
        try:
            self.proc.wait(timeout=timeout)
            return True
        except subprocess.TimeoutExpired:
            return False

    def stop(self, grace: float = 10.0) -> int | None:
        """SIGTERM, then SIGKILL after ``grace`` seconds; returns the exit code."""
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
            if not self.wait(grace):
                # The worker is in its own session (start_new_session), so the
                # group holds only what this bench started.
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.wait(5.0)
        self._log.close()
        return self.proc.returncode

    def tail(self, lines: int = 15) -> str:
        """The end of the worker's log, for error messages."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


def _rss_of(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                # The command name may contain spaces; fields resume after ")".
                ppid = int(stat.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    found, stack = [], [root]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def wait_until(predicate, timeout: float, interval: float = 0.02) -> bool:  # type: ignore[no-untyped-def]
    """Poll ``predicate`` until it is true or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return bool(predicate())
