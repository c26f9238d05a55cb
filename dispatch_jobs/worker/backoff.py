"""Retry backoff: full-jitter exponential, capped (base 1 s, cap 1 min by default).

Full jitter (a uniform draw in ``[0, min(cap, base * 2**(n-1))]``) spreads the
retries of jobs that failed together, so a recovering dependency is not hit by
the whole herd at once.
"""

from __future__ import annotations

import random
from datetime import timedelta
from typing import TYPE_CHECKING

from ..conf import settings
from ..exceptions import InvalidDuration
from ..limits import to_duration

if TYPE_CHECKING:
    from ..compat import Task


def _seconds(value: object, default: timedelta) -> float:
    """A task's bound (normalised at definition, so this is a guard): a duration or
    a number of seconds, zero allowed; anything else falls back to the setting."""
    try:
        return to_duration(value, "backoff", zero=True, numbers=True).total_seconds()
    except InvalidDuration:
        return default.total_seconds()


def retry_delay(
    retry_number: int, task: Task | None = None, rng: random.Random | None = None
) -> timedelta:
    """The wait before retry ``retry_number`` (1 for the first retry).

    The task may override the bounds with ``retry_backoff_base`` and
    ``retry_backoff_cap`` (a ``timedelta`` or seconds); otherwise the
    ``RETRY_BACKOFF_BASE`` / ``RETRY_BACKOFF_CAP`` settings apply.
    """
    base = _seconds(getattr(task, "retry_backoff_base", None), settings.retry_backoff_base)
    cap = _seconds(getattr(task, "retry_backoff_cap", None), settings.retry_backoff_cap)
    exponent = min(max(retry_number - 1, 0), 62)  # bounded: 2**62 seconds is forever anyway
    ceiling = min(cap, base * (2**exponent))
    return timedelta(seconds=(rng or random).uniform(0, ceiling))
