"""The worker's one log line per finished job.

``-v 1``: ``Job 12 app.tasks.send completed in 35 ms.``, or for a failure its
error class and message (``failed (ValueError: boom), retry 1/3 in 0.8s.`` or
``failed for good: ...``), always on one line. ``-v 2`` adds the attempt's
traceback under its line. The admin shows every attempt's traceback whatever the
verbosity: it reads the job's attempts log, not these lines.
"""

from __future__ import annotations

import logging

from .executor import Attempt
from .outcomes import Kind

logger = logging.getLogger("dispatch_jobs.worker")

# A message longer than this is cut in the log line (the admin has it whole).
MESSAGE_MAX = 300


def log_attempt(attempt: Attempt) -> None:
    """Log a stored attempt at INFO (with its traceback when DEBUG is on)."""
    job, outcome = attempt.job, attempt.outcome
    if outcome.kind == Kind.SUCCESS:
        logger.info("Job %s %s completed in %s.", job.pk, job.name, duration(outcome.wall_time))
        return
    verdict = attempt.verdict
    error = one_line(getattr(verdict.transition, "error", "") if verdict else outcome.kind)
    trace = ""
    if outcome.traceback and logger.isEnabledFor(logging.DEBUG):
        trace = "\n" + outcome.traceback.rstrip()
    if attempt.retry_in is not None:
        logger.info(
            "Job %s %s failed (%s), retry %d/%d in %.1fs.%s",
            job.pk,
            job.name,
            error,
            job.retry_count + 1,
            job.max_retries,
            attempt.retry_in.total_seconds(),
            trace,
        )
    else:
        logger.info("Job %s %s failed for good: %s%s", job.pk, job.name, error, trace)


def duration(seconds: float) -> str:
    """``35 ms``, ``2.41 s``, ``3 min 05 s``: as long as it needs, never more."""
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.2f} s"
    minutes, rest = divmod(int(round(seconds)), 60)
    return f"{minutes} min {rest:02d} s"


def one_line(text: str) -> str:
    """The error on one line (a message may span several), cut at ``MESSAGE_MAX``."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= MESSAGE_MAX else flat[: MESSAGE_MAX - 1] + "…"
