"""A job's attempts log: one dict per attempt, appended by the worker's fenced
write and by eviction, read by results and the admin."""

from __future__ import annotations

from typing import Any


def attempt_list(value: Any) -> list[Any]:
    """The log to append to. A column that is not a list is kept, as one entry
    saying what it held, rather than silently dropped."""
    if isinstance(value, list):
        return value
    if value is None:
        return []
    text = repr(value)
    shown = text if len(text) <= 200 else f"{text[:197]}…"
    return [{"status": "unreadable", "message": f"the attempts column held {shown}"}]
