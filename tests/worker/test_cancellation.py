"""A held job's cancellation: one-shot, first reason wins, and a waiter wakes when
it is cancelled from another thread (the heartbeat's, the drain's), whether it
started waiting before the cancel or after. Its event is made by the first wait."""

from __future__ import annotations

import threading
import time

from dispatch_jobs.worker.context import LEASE_LOST, STOP_REQUESTED, TIMED_OUT, Cancellation


def test_the_first_reason_wins_and_it_stays_set() -> None:
    cancellation = Cancellation()
    assert not cancellation.is_set() and cancellation.reason == ""
    cancellation.cancel(TIMED_OUT)
    cancellation.cancel(STOP_REQUESTED, by="ops")
    assert cancellation.is_set()
    assert (cancellation.reason, cancellation.by) == (TIMED_OUT, "")
    assert not cancellation.stop_requested


def test_a_stop_request_names_who_asked() -> None:
    cancellation = Cancellation()
    cancellation.cancel(STOP_REQUESTED, by="ops")
    assert cancellation.stop_requested
    assert cancellation.why == f"{STOP_REQUESTED} (ops)"


def test_a_wait_times_out_when_nobody_cancels() -> None:
    assert Cancellation().wait(0.01) is False


def test_a_wait_after_the_cancel_returns_at_once() -> None:
    cancellation = Cancellation()
    cancellation.cancel(LEASE_LOST)
    started = time.monotonic()
    assert cancellation.wait(30) is True
    assert time.monotonic() - started < 5


def test_a_waiter_wakes_when_another_thread_cancels() -> None:
    cancellation = Cancellation()
    woke: list[bool] = []
    waiter = threading.Thread(target=lambda: woke.append(cancellation.wait(30)))
    waiter.start()
    time.sleep(0.05)  # the waiter is (most likely) inside wait by now
    cancellation.cancel(LEASE_LOST)
    waiter.join(10)
    assert not waiter.is_alive() and woke == [True]


def test_many_waiters_and_a_racing_cancel_all_wake() -> None:
    """Waiters that start before, during and after the cancel all see it."""
    for _ in range(50):
        cancellation = Cancellation()
        woke: list[bool] = []
        waiters = [threading.Thread(target=_wait_into, args=(cancellation, woke)) for _ in range(4)]
        for waiter in waiters[:2]:
            waiter.start()
        canceller = threading.Thread(target=cancellation.cancel, args=(LEASE_LOST,))
        canceller.start()
        for waiter in waiters[2:]:
            waiter.start()
        for thread in [canceller, *waiters]:
            thread.join(10)
        assert woke == [True] * 4


def _wait_into(cancellation: Cancellation, woke: list[bool]) -> None:
    woke.append(cancellation.wait(30))
