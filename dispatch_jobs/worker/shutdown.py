"""Signals: SIGTERM/SIGINT start a graceful drain; a second one hands back at once."""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable
from types import FrameType

logger = logging.getLogger("dispatch_jobs.worker")

SIGNALS = (signal.SIGTERM, signal.SIGINT)


class Shutdown:
    """``draining`` is set by the first signal, ``hurry`` by the second."""

    def __init__(self, wake: threading.Event) -> None:
        self.draining = threading.Event()
        self.hurry = threading.Event()
        self.wake = wake
        self._previous: dict[int, object] = {}

    def request(self, reason: str = "") -> None:
        if self.draining.is_set():
            if not self.hurry.is_set():
                logger.warning("Second stop request: handing running jobs back now.")
            self.hurry.set()
        else:
            logger.info("Stop requested%s: draining.", f" ({reason})" if reason else "")
            self.draining.set()
        self.wake.set()

    def install(self) -> None:
        """Install the handlers (main thread only; elsewhere, stop with request())."""
        if threading.current_thread() is not threading.main_thread():
            return
        for signum in SIGNALS:
            self._previous[signum] = signal.signal(signum, self._handler())

    def restore(self) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)  # type: ignore[arg-type]
        self._previous.clear()

    def _handler(self) -> Callable[[int, FrameType | None], None]:
        def handle(signum: int, frame: FrameType | None) -> None:
            self.request(signal.Signals(signum).name)

        return handle
