"""Every bound a job's definition, options and arguments must respect, declared once.

Task definition (``@task``), ``using()``, enqueue and the store's own ``prepare``
all read these; docs/tasks.md ("Limits") lists them with the reasons below. A
bound is either a column's size or what all three databases (PostgreSQL,
MariaDB, SQLite) and Python's own types can represent, whichever is smaller, so
a value is refused with a clear error before any row exists instead of failing
at INSERT, or worse, in a worker later.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

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
