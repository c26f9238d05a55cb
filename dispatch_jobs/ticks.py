"""When a schedule fires: its ticks, from a cron expression in a time zone or a
fixed interval, and the checks of both at the boundary.

Cron expressions are parsed and matched by cronsim (docs/how-to/periodic.md says
why that library). cronsim is driven in *wall-clock* time, naive datetimes in the
schedule's zone, and each wall time is then placed in the zone here, which is
what gives the daylight-saving rules their one place:

- a wall time that does not exist (the hour skipped when clocks go forward) is
  skipped, not moved;
- a wall time that exists twice (the hour repeated when clocks go back) fires
  once, at its first occurrence (``fold=0``).

Interval ticks are absolute: multiples of the interval since the Unix epoch (UTC),
so every worker computes the same ticks and no zone or DST applies.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError
from django.db import models

from .exceptions import InvalidSchedule

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# Wall times looked at per call before giving up: a year of an every-minute
# expression's repeated hours is far below it; an expression that can never match
# an existing time (only skipped DST minutes) would loop without it.
MAX_CANDIDATES = 10_000
# Candidate windows when looking back for the latest tick at or before a moment.
_LOOKBACK = (timedelta(hours=1), timedelta(days=2), timedelta(days=32), timedelta(days=400))


class MissedTicks(models.TextChoices):
    """What a schedule does with ticks it missed (the fleet was down, or it was late
    by more than the firing grace): fire nothing for them, or fire once for the
    latest of them."""

    SKIP = "skip", "Skip all missed ticks"
    LATEST = "latest", "Fire once for the latest missed tick"


def check_cron(expression: str) -> str:
    """The expression, stripped, if cronsim accepts it; ``InvalidSchedule`` naming
    the problem otherwise."""
    text = " ".join(str(expression).split())
    if not text:
        raise InvalidSchedule("The cron expression is empty.")
    try:
        CronSim(text, datetime(2000, 1, 1))
    except CronSimError as exc:
        raise InvalidSchedule(f"Cron expression {text!r} is not valid: {exc}") from exc
    return text


def check_zone(name: str) -> ZoneInfo:
    """The IANA zone ``name``; ``InvalidSchedule`` naming it otherwise."""
    try:
        return ZoneInfo(str(name))
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise InvalidSchedule(
            f"Unknown time zone {name!r}: give an IANA name such as 'Europe/Paris' or 'UTC'."
        ) from exc


def check_interval(interval: object) -> timedelta:
    if not isinstance(interval, timedelta) or interval < timedelta(seconds=1):
        raise InvalidSchedule(
            f"The interval must be a timedelta of at least 1 second, got {interval!r}."
        )
    return interval


def next_tick(cron: str, interval: timedelta | None, zone: str, after: datetime) -> datetime:
    """The first tick strictly after ``after`` (aware), in UTC."""
    if interval is not None:
        step = _micros(interval)
        elapsed = _micros(after - EPOCH)
        return EPOCH + timedelta(microseconds=(elapsed // step + 1) * step)
    return _next_cron_tick(cron, check_zone(zone), after.astimezone(UTC))


def latest_tick(
    cron: str, interval: timedelta | None, zone: str, at: datetime, since: datetime
) -> datetime | None:
    """The last tick in ``[since, at]``, in UTC, or None when there is none."""
    if interval is not None:
        step = _micros(interval)
        latest = EPOCH + timedelta(microseconds=_micros(at - EPOCH) // step * step)
        return latest if latest >= since else None
    for window in _LOOKBACK:
        start = max(since, at - window)
        found = _last_in(cron, zone, start, at)
        if found is not None or start == since:
            return found
    return _last_in(cron, zone, since, at)


def _last_in(cron: str, zone: str, start: datetime, end: datetime) -> datetime | None:
    """The last tick in ``[start, end]``, walking forward from ``start``."""
    found = None
    tick = next_tick(cron, None, zone, start - timedelta(microseconds=1))
    while tick <= end:
        found = tick
        tick = next_tick(cron, None, zone, tick)
    return found


def _next_cron_tick(cron: str, zone: ZoneInfo, after: datetime) -> datetime:
    start = after.astimezone(zone).replace(tzinfo=None)
    # Wall times after ``after``'s own: in a repeated hour's second pass, those of
    # the first pass (fold=0, already past) fail the instant test below.
    walls = CronSim(check_cron(cron), start)
    for _ in range(MAX_CANDIDATES):
        try:
            wall = next(walls)
        except StopIteration:
            break
        placed = wall.replace(tzinfo=zone)  # fold=0: a repeated time's first occurrence
        instant = placed.astimezone(UTC)
        if instant.astimezone(zone).replace(tzinfo=None) != wall:
            continue  # skipped by a clock going forward: that tick does not exist
        if instant > after:
            return instant
    raise InvalidSchedule(f"Cron expression {cron!r} has no tick after {after:%Y-%m-%d %H:%M} UTC.")


def _micros(delta: timedelta) -> int:
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
