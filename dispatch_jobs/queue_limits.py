"""Queue limits as values: a queue's fleet-wide concurrency, per-org concurrency
and rate, read from ``DISPATCH_JOBS["QUEUE_LIMITS"]`` or the admin's form and
checked here, where they enter (docs/how-to/limits.md).

The store keeps them on the queue's ``QueueControl`` row and enforces them inside
the claim (``store.limited_claim``); this module only says what a valid limit is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from . import limits
from .exceptions import InvalidDuration, InvalidQueueLimits

# The keys of one QUEUE_LIMITS entry.
KEYS = ("max_running", "max_running_per_org", "rate")
RATE_RULE = (
    'a rate is "N/period": N job starts in any period, the period a unit '
    '("s", "m", "h") or a duration ("10s", "1.5m"); e.g. "100/m"'
)


@dataclass(frozen=True)
class QueueLimits:
    """A queue's limits; None is unlimited. ``rate_limit`` starts in any
    ``rate_period`` (both set, or neither)."""

    max_running: int | None = None
    max_running_per_org: int | None = None
    rate_limit: int | None = None
    rate_period: timedelta | None = None

    def __post_init__(self) -> None:
        if (self.rate_limit is None) != (self.rate_period is None):
            raise InvalidQueueLimits("A rate limit needs both a count and a period.")

    @property
    def limited(self) -> bool:
        return any(
            value is not None
            for value in (self.max_running, self.max_running_per_org, self.rate_limit)
        )

    def columns(self) -> dict[str, Any]:
        """The ``QueueControl`` columns these limits are stored in."""
        return {
            "max_running": self.max_running,
            "max_running_per_org": self.max_running_per_org,
            "rate_limit": self.rate_limit,
            "rate_period": self.rate_period,
        }

    def describe(self) -> str:
        """As the admin shows them: "5 running, 2 per org, 100 per 1m" ("" when none)."""
        parts = []
        if self.max_running is not None:
            parts.append(f"{self.max_running} running")
        if self.max_running_per_org is not None:
            parts.append(f"{self.max_running_per_org} per org")
        if self.rate_limit is not None and self.rate_period is not None:
            parts.append(f"{self.rate_limit} per {period_text(self.rate_period)}")
        return ", ".join(parts)


def of_control(control: Any) -> QueueLimits:
    """The limits stored on a ``QueueControl`` row."""
    return QueueLimits(
        max_running=control.max_running,
        max_running_per_org=control.max_running_per_org,
        rate_limit=control.rate_limit,
        rate_period=control.rate_period if control.rate_limit is not None else None,
    )


def to_count(value: object, name: str) -> int | None:
    """A concurrency or rate count: None (unlimited), or an integer from 1 to
    ``QUEUE_LIMIT_MAX``. Zero is refused: pausing the queue says that better."""
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidQueueLimits(
            f"{name} must be a whole number or None, got {limits.short_repr(value)}."
        )
    if not 1 <= value <= limits.QUEUE_LIMIT_MAX:
        hint = " (to stop a queue, pause it)" if value == 0 else ""
        raise InvalidQueueLimits(
            f"{name} must be from 1 to {limits.QUEUE_LIMIT_MAX:,}{hint}, got {value}."
        )
    return value


def to_period(value: object, name: str) -> timedelta:
    """A rate period: a timedelta, seconds, or text ("1m", "10s"); 1s to 1 day."""
    try:
        return limits.to_duration(
            value,
            name,
            low=limits.RATE_PERIOD_MIN,
            high=limits.RATE_PERIOD_MAX,
            numbers=True,
            text=True,
        )
    except InvalidDuration as exc:
        raise InvalidQueueLimits(str(exc)) from None


def to_rate(value: object, name: str) -> tuple[int, timedelta] | None:
    """``"100/m"`` as (100, one minute); None for no rate limit."""
    if value is None:
        return None
    if not isinstance(value, str) or value.count("/") != 1:
        raise InvalidQueueLimits(f"{name}: {RATE_RULE}; got {limits.short_repr(value)}.")
    count_text, period_text_ = (part.strip() for part in value.split("/"))
    if not count_text.isdigit():
        raise InvalidQueueLimits(f"{name}: {RATE_RULE}; got {limits.short_repr(value)}.")
    count = to_count(int(count_text), f"{name}'s count")
    assert count is not None
    if period_text_ in ("s", "m", "h"):
        period_text_ = f"1{period_text_}"
    return count, to_period(period_text_, f"{name}'s period")


def to_limits(queue: object, entry: object) -> QueueLimits:
    """One ``QUEUE_LIMITS`` entry: ``{"max_running": 5, "max_running_per_org": 2,
    "rate": "100/m"}`` (every key optional)."""
    if not limits.is_queue_name(queue):
        raise InvalidQueueLimits(
            f"{limits.short_repr(queue)} is not a queue name ({limits.QUEUE_NAME_RULE})."
        )
    where = f"Queue {queue!r}"
    if not isinstance(entry, Mapping):
        raise InvalidQueueLimits(
            f"{where}: an entry is a dict with keys among {', '.join(KEYS)}, "
            f"got {limits.short_repr(entry)}."
        )
    unknown = sorted(str(key) for key in entry if key not in KEYS)
    if unknown:
        raise InvalidQueueLimits(
            f"{where}: unknown key(s) {', '.join(unknown)}; the keys are {', '.join(KEYS)}."
        )
    rate = to_rate(entry.get("rate"), f"{where}: rate")
    return QueueLimits(
        max_running=to_count(entry.get("max_running"), f"{where}: max_running"),
        max_running_per_org=to_count(
            entry.get("max_running_per_org"), f"{where}: max_running_per_org"
        ),
        rate_limit=rate[0] if rate else None,
        rate_period=rate[1] if rate else None,
    )


def parse_queue_limits(value: object) -> dict[str, QueueLimits]:
    """The whole ``QUEUE_LIMITS`` setting, checked: ``{queue: QueueLimits}``."""
    if not isinstance(value, Mapping):
        raise InvalidQueueLimits(
            f"QUEUE_LIMITS must be a dict of queue name -> limits, got {type(value).__name__}."
        )
    return {str(queue): to_limits(queue, entry) for queue, entry in value.items()}


def settings_queue_limits() -> dict[str, QueueLimits]:
    """``DISPATCH_JOBS["QUEUE_LIMITS"]``, checked (the system check E035 says so first)."""
    from .conf import settings

    return parse_queue_limits(settings.queue_limits)


def period_text(period: timedelta) -> str:
    """A period as the settings write it: "1m", "10s", "1h", "1.5s"."""
    seconds = period.total_seconds()
    for unit, size in (("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"
