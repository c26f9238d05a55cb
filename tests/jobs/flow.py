"""Task functions of the queue limits suite (tests/worker/test_queue_limits.py).
What they see is written to files under a directory the test passes in, to be
read across processes."""

import os as _os
import time as _time
from pathlib import Path as _Path

from dispatch_jobs.compat import task as _task


@_task
def sample_running(directory: str, queue: str, seconds: float = 0.0, phase: str = "") -> int:
    """While it runs, a marker file of its own exists: it counts the markers
    (handlers of ``queue`` running right now, in any process) and the rows of
    ``queue`` the database holds as running, and appends both to ``samples``."""
    from dispatch_jobs.models import Job, JobState

    folder = _Path(directory)
    marker = folder / f"run-{_os.getpid()}-{_time.monotonic_ns()}"
    marker.touch()
    try:
        alongside = len(list(folder.glob("run-*")))
        running = Job.objects.filter(queue=queue, state=JobState.RUNNING).count()
        with open(folder / f"samples{phase}", "a") as handle:
            handle.write(f"{alongside} {running}\n")
        if seconds:
            _time.sleep(seconds)
    finally:
        marker.unlink()
    return running
