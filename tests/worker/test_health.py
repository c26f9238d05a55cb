"""Claim health: when failing claims are logged as errors, and what the heartbeat
reads. The clock is injected (tests/worker/test_liveness.py runs the real thing)."""

from __future__ import annotations

import logging

import pytest
from django.db import OperationalError

from dispatch_jobs.worker.health import ERROR_EVERY, ClaimFailure, ClaimHealth

GRACE = 0.5


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def errors(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]


def test_an_error_once_past_the_grace_then_at_least_once_a_minute(caplog) -> None:
    clock = Clock()
    health = ClaimHealth(GRACE, clock)
    for _ in range(int(180 / 2) + 1):  # a retry every 2 s for three minutes
        health.failed(OperationalError("canceling statement due to statement timeout"))
        clock.now += 2
    logged = errors(caplog)
    # At 2 s (the first failure past the grace), then every ERROR_EVERY seconds.
    assert len(logged) == 1 + int((180 - 2) // ERROR_EVERY)
    assert ERROR_EVERY <= 60
    assert "OperationalError: canceling statement due to statement timeout" in logged[0]
    assert "failing for 2s" in logged[0]


def test_a_blip_shorter_than_the_grace_is_not_an_error(caplog) -> None:
    clock = Clock()
    health = ClaimHealth(GRACE, clock)
    health.failed(OperationalError("server closed the connection unexpectedly"))
    clock.now += 0.1
    health.succeeded()
    assert errors(caplog) == [] and health.failure() is None


def test_failure_reports_the_last_error_and_since_when_until_a_claim_succeeds(caplog) -> None:
    clock = Clock()
    health = ClaimHealth(GRACE, clock)
    assert health.failure() is None
    health.failed(OperationalError("first"))
    clock.now += 3
    health.failed(OperationalError("second"))
    clock.now += 1
    assert health.failure() == ClaimFailure("OperationalError: second", 4.0)
    with caplog.at_level(logging.WARNING, logger="dispatch_jobs.worker"):
        health.succeeded()
    assert health.failure() is None
    assert "Claims succeed again, after failing for 4s." in caplog.messages
    # A new run of failures starts from zero.
    health.failed(OperationalError("third"))
    assert health.failure() == ClaimFailure("OperationalError: third", 0.0)
