"""System checks of the worker's settings: one test per id."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import override_settings

from dispatch_jobs.checks import check_worker_settings


def ids_for(value: object) -> set[str]:
    with override_settings(DISPATCH_JOBS=value):
        return {message.id for message in check_worker_settings()}


def test_defaults_pass():
    assert ids_for({}) == set()


@pytest.mark.parametrize("bad", [timedelta(0), timedelta(seconds=-1), 5, "1s"])
def test_e030_worker_durations(bad):
    assert "dispatch_jobs.E030" in ids_for({"RECLAIM_INTERVAL": bad})
    assert "dispatch_jobs.E030" not in ids_for({"SHUTDOWN_GRACE": timedelta(0)})
    assert "dispatch_jobs.E030" in ids_for({"SHUTDOWN_GRACE": timedelta(seconds=-1)})


@pytest.mark.parametrize(
    ("key", "bad"),
    [
        ("WORKER_CONCURRENCY", 0),
        ("MAX_EVICTIONS", -1),
        ("WORKER_CONCURRENCY", True),
        ("MAX_EVICTIONS", "5"),
        ("WORKER_PREFETCH", -1),
        ("WORKER_PREFETCH", None),
    ],
)
def test_e031_worker_integers(key, bad):
    assert "dispatch_jobs.E031" in ids_for({key: bad})
    assert "dispatch_jobs.E031" not in ids_for(
        {"WORKER_CONCURRENCY": 1, "MAX_EVICTIONS": 0, "WORKER_PREFETCH": 0}
    )


@pytest.mark.parametrize("bad", [[], "default", [""], ["q" * 101], [1]])
def test_e032_worker_queues(bad):
    assert "dispatch_jobs.E032" in ids_for({"WORKER_QUEUES": bad})
    assert "dispatch_jobs.E032" not in ids_for({"WORKER_QUEUES": ["a", "b"]})
    assert "dispatch_jobs.E032" not in ids_for({"WORKER_QUEUES": None})


def test_e033_flags_are_booleans():
    assert "dispatch_jobs.E033" in ids_for({"NOTIFY": "yes"})
    assert "dispatch_jobs.E033" not in ids_for({"NOTIFY": False})


def test_e034_maximum_below_minimum():
    assert "dispatch_jobs.E034" in ids_for(
        {"POLL_INTERVAL": timedelta(seconds=5), "MAX_POLL_INTERVAL": timedelta(seconds=1)}
    )
    assert "dispatch_jobs.E034" in ids_for({"RETRY_BACKOFF_CAP": timedelta(milliseconds=10)})
    assert "dispatch_jobs.E034" not in ids_for({"MAX_POLL_INTERVAL": timedelta(seconds=1)})


def test_w030_stale_after_too_short_for_the_heartbeat():
    assert "dispatch_jobs.W030" in ids_for({"WORKER_STALE_AFTER": timedelta(seconds=20)})
    assert "dispatch_jobs.W030" not in ids_for({"WORKER_STALE_AFTER": timedelta(seconds=30)})


@pytest.mark.parametrize("bad", ["container", "", None, 1])
def test_e035_worker_execution_is_a_rung(bad):
    assert "dispatch_jobs.E036" in ids_for({"WORKER_EXECUTION": bad})
    assert "dispatch_jobs.E036" not in ids_for({"WORKER_EXECUTION": "subprocess"})
    assert "dispatch_jobs.E036" not in ids_for({"WORKER_EXECUTION": "in-process"})
