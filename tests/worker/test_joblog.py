"""The per-job line's pieces: durations read at a glance, errors on one line."""

from __future__ import annotations

import pytest

from dispatch_jobs.worker.joblog import MESSAGE_MAX, duration, one_line


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0.0004, "0 ms"),
        (0.035, "35 ms"),
        (2.413, "2.41 s"),
        (59.994, "59.99 s"),
        (185, "3 min 05 s"),
    ],
)
def test_duration(seconds: float, text: str) -> None:
    assert duration(seconds) == text


def test_an_error_spanning_lines_is_one_line_and_bounded() -> None:
    assert one_line("KeyError: 'a'\n  more\tdetail") == "KeyError: 'a' more detail"
    long = one_line("ValueError: " + "x" * 1000)
    assert len(long) == MESSAGE_MAX and long.endswith("…")
