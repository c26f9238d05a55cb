"""How the console writes times, durations, states and attempts: one format
each, used by every page (the template filters in
``dispatch_jobs.templatetags.dispatch_jobs_admin`` call these)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django.utils.dateparse import parse_datetime
from django.utils.timezone import localtime

from ..models import JobState

EMPTY = "–"
MOMENT_FORMAT = "%Y-%m-%d %H:%M:%S"
# First line of an error, cut to this many characters, in the job list.
ERROR_SUMMARY_CHARS = 90


def moment(value: datetime | str | None) -> str:
    """A point in time, in the current time zone: "2026-12-01 13:04:05"."""
    if isinstance(value, str):
        value = parse_datetime(value)
    if value is None:
        return EMPTY
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return localtime(value).strftime(MOMENT_FORMAT)


def duration(value: timedelta | float | None) -> str:
    """A human duration, to the precision that matters: "850 ms", "4.2 s",
    "3 min 4 s", "2 h 5 min", "3 d 4 h" (never microseconds)."""
    if value is None:
        return EMPTY
    seconds = value.total_seconds() if isinstance(value, timedelta) else float(value)
    if seconds < 0:
        return "-" + duration(-seconds)
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 10:
        return f"{seconds:.1f} s"
    whole = int(seconds)
    if whole < 60:
        return f"{whole} s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} min {secs} s" if secs else f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h" if hours else f"{days} d"


def attempts_made(state: str, retry_count: int, *, stopped_running: bool = False) -> int:
    """Attempts a job has had (counting one in progress). ``retry_count``
    counts the failed attempts that were retried; a finished or running job
    has had one more (its last, or current, attempt); a pending or retrying one
    has not started another, nor has a job cancelled before it started again.
    A job cancelled while it ran (``stopped_running``: an operator's stop request
    is on it) had that attempt too."""
    ran_once_more = state in (JobState.RUNNING, JobState.COMPLETED, JobState.FAILED) or (
        state == JobState.CANCELLED and stopped_running
    )
    return retry_count + (1 if ran_once_more else 0)


def error_summary(last_error: str | None) -> str:
    """The first line of an error, cut to ``ERROR_SUMMARY_CHARS``."""
    line = (last_error or "").strip().split("\n", 1)[0].strip()
    if len(line) > ERROR_SUMMARY_CHARS:
        return line[: ERROR_SUMMARY_CHARS - 1] + "…"
    return line
