"""Every bound a job's definition, options and arguments must respect, declared once.

Task definition (``@task``), ``using()``, enqueue and the store's own ``prepare``
all read these; docs/tasks.md ("Limits") lists them with the reasons below. A
bound is either a column's size or what all three databases (PostgreSQL,
MariaDB, SQLite) and Python's own types can represent, whichever is smaller, so
a value is refused with a clear error before any row exists instead of failing
at INSERT, or worse, in a worker later.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, timedelta

from .exceptions import InvalidDuration

# --- Text columns (their max_length in models.py).
NAME_MAX = 255  # Job.name: the import path or the stable alias
QUEUE_MAX = 100  # Job.queue
SCOPE_MAX = 100  # Job.scope_app_id, Job.scope_org_id
RESOURCE_CLASS_MAX = 100  # Job.resource_class
EXECUTION_MAX = 32  # Job.execution

# --- Integers.
# Job.priority, max_retries, retry_count are 32-bit columns.
INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1
# Every attempt appends an entry (with its traceback) to the row's attempts log,
# so retries are bounded well below the column: 1,000 keeps the row in megabytes.
MAX_RETRIES_MAX = 1_000

# --- Durations.
# A lease is renewed every HEARTBEAT_INTERVAL and must outlive the gap between
# beats; below a second a lease is only ever a race. Its expiry is computed as
# database-now + lease_ttl on every renewal: a week stays far inside every
# database's timestamp range, and a crashed worker's job still comes back.
LEASE_TTL_MIN = timedelta(seconds=1)
LEASE_TTL_MAX = timedelta(days=7)
# One attempt's time limit. A millisecond is the finest a worker can enforce;
# an attempt longer than 30 days would not survive any deploy of its worker.
TIMEOUT_MIN = timedelta(milliseconds=1)
TIMEOUT_MAX = timedelta(days=30)
# Retry backoff bounds: a retry's run_at is now + at most the cap.
BACKOFF_MIN = timedelta(milliseconds=1)
BACKOFF_MAX = timedelta(days=30)

# --- Queue limits (docs/how-to/limits.md). A concurrency or rate count fits the
# PositiveIntegerField columns with room; a rate period of a second to a day
# keeps the sliding window's rows (one per start, pruned after a period) few.
QUEUE_LIMIT_MAX = 1_000_000
RATE_PERIOD_MIN = timedelta(seconds=1)
RATE_PERIOD_MAX = timedelta(days=1)

# --- Datetimes (run_after). MariaDB's DATETIME holds 1000-01-01 .. 9999-12-31;
# a day off each end keeps every time zone's conversion to UTC inside it.
RUN_AFTER_MIN = datetime(1000, 1, 2, tzinfo=UTC)
RUN_AFTER_MAX = datetime(9999, 12, 30, tzinfo=UTC)

# --- Resources.
# Each quantity, in canonical units (millicores, bytes, milli-devices, counts):
# 2**53 - 1 fits the BIGINT claim columns and is exact as a float, which the
# parser of readable quantities ("1.5Gi") and JSON readers go through.
RESOURCE_QUANTITY_MAX = 2**53 - 1
# Custom keys are stored as ",a,b," in Job.custom_keys (500 characters):
# 8 keys of at most 60 characters always fit (1 + 8 * 61 = 489).
CUSTOM_KEY_MAX = 60
CUSTOM_KEYS_MAX = 8
CUSTOM_KEYS_COLUMN_MAX = 500

# --- JSON values (arguments, return values).
# Containers nested in one stored JSON document: MariaDB refuses a 32nd level
# (its JSON_VALID check), PostgreSQL and SQLite allow more; the smallest wins.
JSON_MAX_DEPTH = 31
# A handler's return value, encoded as JSON: larger ones fail their own job
# (InvalidReturnValue) rather than a batch, or MariaDB's max_allowed_packet.
RETURN_VALUE_MAX_BYTES = 1024 * 1024
# The payload wraps each argument in two levels: {"args": [...]} / {"kwargs": {...}}.
ARGUMENT_MAX_DEPTH = JSON_MAX_DEPTH - 2


def duration_bounds(option: str) -> tuple[timedelta, timedelta]:
    """The (minimum, maximum) of a duration option of a task."""
    if option == "lease_ttl":
        return LEASE_TTL_MIN, LEASE_TTL_MAX
    if option == "timeout":
        return TIMEOUT_MIN, TIMEOUT_MAX
    return BACKOFF_MIN, BACKOFF_MAX


# --- One function per rule: every caller (task definition, enqueue, the store,
# the worker's arguments, the system checks, the admin) asks these.

QUEUE_NAME_RULE = f"1 to {QUEUE_MAX} characters"


def is_storable_time(value: datetime) -> bool:
    """Whether every supported database stores ``value`` (RUN_AFTER_MIN..MAX). A
    naive time is compared as a wall-clock time: the bounds keep a day of margin
    for its zone."""
    low, high = RUN_AFTER_MIN, RUN_AFTER_MAX
    if value.utcoffset() is None:  # naive, as django.utils.timezone.is_naive says
        low, high = low.replace(tzinfo=None), high.replace(tzinfo=None)
    return low <= value <= high


def is_queue_name(value: object) -> bool:
    """A queue name: a string of 1 to ``QUEUE_MAX`` characters (Job.queue)."""
    return isinstance(value, str) and 0 < len(value) <= QUEUE_MAX


_DURATION_TEXT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def to_duration(
    value: object,
    name: str,
    *,
    low: timedelta | None = None,
    high: timedelta | None = None,
    zero: bool = False,
    numbers: bool = False,
    text: bool = False,
) -> timedelta:
    """``value`` as a duration, or ``InvalidDuration`` naming ``name`` and saying why.

    A ``timedelta`` is always read; with ``numbers``, a number of seconds (not a
    bool) too; with ``text``, also ``"0.5"``, ``"500ms"``, ``"2s"``, ``"1m"`` or
    ``"1h"``. It must be positive (or zero, with ``zero``), and from ``low`` to
    ``high`` when they are given. Bounds are compared in seconds first, so a number
    too large for a ``timedelta`` (or infinite) is out of bounds, not an
    ``OverflowError``.
    """
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif numbers and isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    elif text and isinstance(value, str) and (match := _DURATION_TEXT.match(value)):
        seconds = float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    else:
        accepted = (
            "use seconds such as 2 or 0.5, or a unit: 500ms, 2s, 1m, 1h"
            if text
            else "a timedelta or a number of seconds"
            if numbers
            else "a datetime.timedelta"
        )
        raise InvalidDuration(
            f"{name}: cannot read {short_repr(value)} as a duration ({accepted})."
        )
    if not (seconds >= 0 if zero else seconds > 0):
        sign = "must not be negative" if zero else "must be positive"
        raise InvalidDuration(f"{name} {sign}, got {short_repr(value)}.")
    too_low = low is not None and seconds < low.total_seconds()
    too_high = high is not None and seconds > high.total_seconds()
    if too_low or too_high or not math.isfinite(seconds):
        raise InvalidDuration(f"{name} must be {span(low, high)}, got {short_repr(value)}.")
    if isinstance(value, timedelta):
        return value
    try:
        return timedelta(seconds=seconds)
    except OverflowError:  # over 999,999,999 days: no bound was given to refuse it
        raise InvalidDuration(f"{name} is too long, got {short_repr(value)}.") from None


def span(low: timedelta | None, high: timedelta | None) -> str:
    """``between 1s and 7 days``, ``at least 1ms``, ``at most 30 days`` or ``finite``."""
    if low is not None and high is not None:
        return f"between {readable(low)} and {readable(high)}"
    if low is not None:
        return f"at least {readable(low)}"
    return f"at most {readable(high)}" if high is not None else "finite"


def readable(value: timedelta) -> str:
    """A bound as people write it: "7 days", "1s", "1ms"."""
    if value and value % timedelta(days=1) == timedelta(0):
        days = value.days
        return f"{days} day{'s' if days != 1 else ''}"
    seconds = value.total_seconds()
    return f"{seconds:g}s" if seconds >= 1 else f"{seconds * 1000:g}ms"


def short_repr(value: object) -> str:
    """``repr(value)``, cut to 60 characters for an error message."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
