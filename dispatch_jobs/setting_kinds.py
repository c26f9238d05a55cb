"""The kinds of setting ``conf.Settings`` declares: the values each takes, the type
it reads as, and the system check's message for a value it refuses.

Durations are checked by ``limits.to_duration`` and queue names by
``limits.is_queue_name``, as everywhere else.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from . import limits
from .exceptions import InvalidDuration


class Kind[T]:
    """A setting's values. ``expected`` completes "must be ..." in the check's message."""

    hint = ""

    @property
    def expected(self) -> str:
        return "any value"

    def accepts(self, value: object) -> bool:
        return True

    def read(self, value: Any) -> T:
        return value  # what the kind accepts is a T (a subclass converts when not)

    def message(self, key: str, got: str) -> str:
        """The check's message; ``key`` is ``DISPATCH_JOBS['KEY']``, ``got`` the value shown."""
        return f"{key} must be {self.expected}, got {got}."

    def problem(self, key: str, value: object) -> str | None:
        """The message refusing ``value`` of ``key``, or None when it is accepted."""
        if self.accepts(value):
            return None
        return self.message(f"DISPATCH_JOBS[{key!r}]", repr(value))


@dataclass(frozen=True)
class Duration(Kind[timedelta]):
    """A ``datetime.timedelta``: positive (or zero too, with ``zero``), within the
    bounds given (``limits``), checked by ``limits.to_duration``."""

    low: timedelta | None = None
    high: timedelta | None = None
    zero: bool = False

    @property
    def expected(self) -> str:
        if self.zero:
            return "a non-negative datetime.timedelta"
        if self.low is None and self.high is None:
            return "a positive datetime.timedelta"
        if self.low is not None and self.high is None:
            return f"a datetime.timedelta of at least {limits.readable(self.low)}"
        return f"a datetime.timedelta {limits.span(self.low, self.high)}"

    def accepts(self, value: object) -> bool:
        try:
            limits.to_duration(value, "", low=self.low, high=self.high, zero=self.zero)
        except InvalidDuration:
            return False
        return True


@dataclass(frozen=True)
class Integer(Kind[int]):
    """An integer of at least ``low`` (``True`` and ``False`` are not integers here)."""

    low: int

    @property
    def expected(self) -> str:
        return f"an integer >= {self.low}"

    def accepts(self, value: object) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and value >= self.low

    def read(self, value: Any) -> int:
        return int(value)


class Flag(Kind[bool]):
    @property
    def expected(self) -> str:
        return "True or False"

    def accepts(self, value: object) -> bool:
        return isinstance(value, bool)

    def read(self, value: Any) -> bool:
        return bool(value)


class Text(Kind[str]):
    """A string, ``""`` when unset; checked by ``checks.py`` against other settings
    (an alias must be in ``DATABASES``)."""

    @property
    def expected(self) -> str:
        return "a string"

    def read(self, value: Any) -> str:
        return str(value or "")


@dataclass(frozen=True)
class CallablePath(Text):
    """The dotted path of a callable of ``signature``; ``""`` (or None) for none.

    The path is imported by the check, so a wrong one fails ``manage.py check``
    rather than the first job or request that needs it.
    """

    signature: str

    @property
    def expected(self) -> str:
        return f'the dotted path of a callable {self.signature}, or ""'

    def message(self, key: str, got: str, reason: str = "‹reason›") -> str:
        return f"{key} = {got} must name a callable {self.signature}, but {reason}."

    def problem(self, key: str, value: object) -> str | None:
        if value in ("", None):
            return None
        from django.utils.module_loading import import_string

        try:
            func = import_string(value) if isinstance(value, str) else None
        except ImportError as exc:
            func, reason = None, f"it cannot be imported ({exc})"
        else:
            reason = "it is not callable" if isinstance(value, str) else "it is not a dotted path"
        if callable(func):
            return None
        return self.message(f"DISPATCH_JOBS[{key!r}]", repr(value), reason)


@dataclass(frozen=True)
class Secret(Text):
    """A secret string of at least ``min_length`` characters, or ``""`` for none.
    Its message never shows the value."""

    min_length: int
    unset: str
    hint: str = ""

    @property
    def expected(self) -> str:
        return f'a string of at least {self.min_length} characters, or "" {self.unset}'

    def message(self, key: str, got: str) -> str:
        return f"{key} must be {self.expected}; got {got}."

    def accepts(self, value: object) -> bool:
        return isinstance(value, str) and (not value or len(value) >= self.min_length)

    def problem(self, key: str, value: object) -> str | None:
        if self.accepts(value):
            return None
        got = "a shorter string" if isinstance(value, str) else type(value).__name__
        return self.message(f"DISPATCH_JOBS[{key!r}]", got)


@dataclass(frozen=True)
class Choice(Kind[str]):
    """One of ``choices`` (strings)."""

    choices: tuple[str, ...]

    @property
    def expected(self) -> str:
        return "one of " + ", ".join(repr(choice) for choice in self.choices)

    def accepts(self, value: object) -> bool:
        return isinstance(value, str) and value in self.choices


class QueueNames(Kind[list[str] | None]):
    """None, or a non-empty list of queue names (``limits.is_queue_name``)."""

    @property
    def expected(self) -> str:
        return (
            "None (the queues TASKS names) or a non-empty list of queue names "
            f"({limits.QUEUE_NAME_RULE})"
        )

    def accepts(self, value: object) -> bool:
        return value is None or (
            isinstance(value, list | tuple)
            and bool(value)
            and all(limits.is_queue_name(name) for name in value)
        )

    def read(self, value: Any) -> list[str] | None:
        return None if value is None else list(value)


class QueueLimitsTable(Kind[dict[str, Any]]):
    """``{queue: {"max_running": N, "max_running_per_org": N, "rate": "N/period"}}``,
    checked by ``queue_limits.parse_queue_limits`` (its message says what is wrong)."""

    hint = "See docs/how-to/limits.md for the entry's keys."

    @property
    def expected(self) -> str:
        return "a dict of queue name -> {max_running, max_running_per_org, rate}"

    def problem(self, key: str, value: object) -> str | None:
        from .exceptions import InvalidQueueLimits
        from .queue_limits import parse_queue_limits

        try:
            parse_queue_limits(value)
        except InvalidQueueLimits as exc:
            return f"DISPATCH_JOBS[{key!r}]: {exc}"
        return None
