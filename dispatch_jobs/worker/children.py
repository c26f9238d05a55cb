"""The subprocess rung's child processes, seen from the worker.

A ``Child`` is one process started with ``worker.child.main``: Django set up
once, then jobs one at a time through a pipe pair (``frames``). ``Children`` is
the pool: at most one child per executor thread, reused from job to job, and
replaced after ``child_max_jobs`` jobs, once its resident memory passes
``child_max_rss``, after it ran out of memory, or when it was killed or died.

Children start in their own session, so a Ctrl-C or a signal to the worker's
process group reaches the worker alone: it decides what becomes of running jobs.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

from ..exceptions import ChildUnavailable
from . import frames

logger = logging.getLogger("dispatch_jobs.worker")

# How long a new child may take to import Django and the project.
START_TIMEOUT = 120.0
# Django first: importing dispatch_jobs.worker needs the app registry ready.
_BOOT = (
    "import sys, django; django.setup(); "
    "from dispatch_jobs.worker.child import main; sys.exit(main(sys.argv))"
)


@dataclass(frozen=True)
class Exit:
    """How a child ended: its wait status and resource usage (``os.wait4``)."""

    status: int
    rusage: Any

    def describe(self) -> str:
        """``"exited with code 3"`` or ``"killed by signal 11 (SIGSEGV)"``."""
        if os.WIFSIGNALED(self.status):
            number = os.WTERMSIG(self.status)
            try:
                name = signal.Signals(number).name
            except ValueError:
                name = "unknown"
            return f"killed by signal {number} ({name})"
        return f"exited with code {os.WEXITSTATUS(self.status)}"

    @property
    def signal(self) -> int | None:
        return os.WTERMSIG(self.status) if os.WIFSIGNALED(self.status) else None

    @property
    def cpu_seconds(self) -> float:
        return float(self.rusage.ru_utime + self.rusage.ru_stime)

    @property
    def peak_rss(self) -> int:
        return int(self.rusage.ru_maxrss) * 1024  # kB on Linux


class Child:
    """One child process and its pipes."""

    def __init__(self) -> None:
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()
        env = dict(os.environ)
        # The worker's import path, whatever put it there (manage.py's directory,
        # -m from a checkout): the child must import the same project.
        env["PYTHONPATH"] = os.pathsep.join(path or os.getcwd() for path in sys.path)
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-c", _BOOT, str(to_child_r), str(from_child_w), _verbosity()],
                pass_fds=(to_child_r, from_child_w),
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
            )
        except OSError as exc:
            os.close(self._to_child)
            os.close(self._from_child)
            raise ChildUnavailable(f"starting a child process failed: {exc}") from exc
        finally:
            os.close(to_child_r)
            os.close(from_child_w)
        self.pid = self.process.pid
        self.jobs = 0
        self.rss = 0
        # Its CPU time when it last answered: what a kill's totals are counted from.
        self.cpu = 0.0
        self.ready = False
        self.exit: Exit | None = None

    def wait_ready(self, timeout: float = START_TIMEOUT) -> None:
        """Block until the child has set Django up; ``ChildUnavailable`` if it died
        or took longer than ``timeout``."""
        if self.ready:
            return
        try:
            message = self.receive(timeout)
        except EOFError:
            ended = self.reap()
            raise ChildUnavailable(
                f"the child process {self.pid} {ended.describe()} while starting "
                "(its output is in the worker's log)"
            ) from None
        if message is None:
            self.kill(0.0)
            raise ChildUnavailable(f"the child process took over {timeout:g}s to start")
        self.cpu = message[1]
        self.ready = True

    def send(self, message: Any) -> None:
        frames.send(self._to_child, message)

    def receive(self, timeout: float) -> Any:
        """The next message, or None after ``timeout`` seconds; ``EOFError`` once
        the child has closed its end (exited, or died)."""
        readable, _, _ = select.select([self._from_child], [], [], max(timeout, 0.0))
        if not readable:
            return None
        return frames.receive(self._from_child)

    def kill(self, grace: float) -> Exit:
        """SIGTERM, then SIGKILL if it is still there after ``grace`` seconds."""
        if self.exit is not None:
            return self.exit
        self._signal(signal.SIGTERM)
        end = time.monotonic() + grace
        while time.monotonic() < end:
            if self._reap(os.WNOHANG) is not None:
                return self._closed()
            time.sleep(0.01)
        self._signal(signal.SIGKILL)
        return self.reap()

    def reap(self) -> Exit:
        """Wait for the (dead or dying) child; its exit status and rusage."""
        if self.exit is None:
            self._reap(0)
        return self._closed()

    def close(self, timeout: float = 5.0) -> None:
        """Ask the child to exit (closing its pipe ends it) and wait for it."""
        if self.exit is not None:
            return
        self._close_pipes()
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self._reap(os.WNOHANG) is not None:
                return
            time.sleep(0.02)
        self.kill(0.0)

    def _signal(self, number: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, number)

    def _reap(self, flags: int) -> Exit | None:
        """``os.wait4`` (Popen would only give the status, not the rusage)."""
        try:
            pid, status, rusage = os.wait4(self.pid, flags)
        except ChildProcessError:
            pid, status, rusage = self.pid, 0, None
        if pid == 0:
            return None
        self.exit = Exit(status, rusage or _NO_USAGE)
        self.process.returncode = os.waitstatus_to_exitcode(status) if rusage else 0
        return self.exit

    def _closed(self) -> Exit:
        self._close_pipes()
        assert self.exit is not None
        return self.exit

    def _close_pipes(self) -> None:
        for name in ("_to_child", "_from_child"):
            fd = getattr(self, name)
            if fd >= 0:
                os.close(fd)
                setattr(self, name, -1)


def _verbosity() -> str:
    from . import verbosity

    return "" if verbosity.configured is None else str(verbosity.configured)


@dataclass(frozen=True)
class _Usage:
    ru_utime: float = 0.0
    ru_stime: float = 0.0
    ru_maxrss: int = 0


_NO_USAGE = _Usage()


class Children:
    """The pool of children: checked out by an executor thread for one job."""

    def __init__(self, max_jobs: int, max_rss: int) -> None:
        self.max_jobs = max_jobs
        self.max_rss = max_rss
        self._idle: list[Child] = []
        self._lock = threading.Lock()
        self._closed = False

    def prewarm(self, count: int) -> None:
        """Start ``count`` children now, so the first jobs need not wait for Django
        to set up (they are waited for when first checked out)."""
        for _ in range(count):
            try:
                child = Child()
            except ChildUnavailable as exc:
                logger.warning("Could not start a child process: %s", exc)
                return
            with self._lock:
                self._idle.append(child)

    def checkout(self) -> Child:
        """A ready child: an idle one, or a new one."""
        with self._lock:
            child = self._idle.pop() if self._idle else None
        if child is None:
            child = Child()
        try:
            child.wait_ready()
        except ChildUnavailable:
            child.close(0.0)
            raise
        return child

    def checkin(self, child: Child, *, replace: bool = False) -> None:
        """Take a child back after a job; replace it when it is spent."""
        child.jobs += 1
        spent = replace or child.jobs >= self.max_jobs
        if self.max_rss and child.rss > self.max_rss:
            logger.info(
                "Child %s holds %d bytes resident (CHILD_MAX_RSS %d): replacing it.",
                child.pid,
                child.rss,
                self.max_rss,
            )
            spent = True
        if spent:
            child.close()
            self.replenish()
            return
        with self._lock:
            if not self._closed:
                self._idle.append(child)
                return
        child.close()

    def discard(self, child: Child) -> None:
        """A child that was killed or died: its place goes to a new one."""
        child.close(0.0)
        self.replenish()

    def replenish(self) -> None:
        with self._lock:
            if self._closed:
                return
        self.prewarm(1)

    def close(self) -> None:
        """Stop every idle child (a child still running a job is its thread's)."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for child in idle:
            child.close()
