"""Locality fed by the cache: a worker offers its cached hashes to each claim, so
jobs sharing inputs land on the worker that has them (bench/locality.py is the
simulation; here its outcome is asserted exactly: it is deterministic)."""

from __future__ import annotations

import threading

import pytest

from bench.locality import simulate
from dispatch_jobs import artifacts
from dispatch_jobs.inputs import ref_of
from dispatch_jobs.worker.config import build_config
from dispatch_jobs.worker.fetcher import Fetcher
from dispatch_jobs.worker.inflight import Inflight
from dispatch_jobs.worker.staging import ArtifactCache
from tests.jobs import input_tasks

pytestmark = pytest.mark.django_db


def test_jobs_land_on_the_worker_that_has_their_input(tmp_path):
    with_ = simulate(prefer=True, jobs=36, directory=tmp_path)
    assert with_.jobs == 36
    # Alternating claims, 18 jobs per worker's inputs: each takes exactly its own.
    assert with_.on_home_worker == 36
    assert (with_.hits, with_.downloads) == (36, 0)


def test_without_preference_the_caches_miss(tmp_path):
    without = simulate(prefer=False, jobs=36, directory=tmp_path)
    assert without.jobs == 36
    assert without.downloads > 0 and without.on_home_worker < 36
    assert without.hit_rate < 1.0


def test_the_fetcher_offers_the_cache_and_the_claim_prefers_it(tmp_path):
    """Within one priority band, the older job loses to the one whose input is here."""
    cache = ArtifactCache(tmp_path / "cache", 10_000)
    here, elsewhere = artifacts.register(b"here"), artifacts.register(b"elsewhere")
    cache.release(cache.acquire(ref_of(here)).name)
    older = input_tasks.size_of.using(queue_name="low", inputs={"data": elsewhere}).enqueue()
    newer = input_tasks.size_of.using(queue_name="low", inputs={"data": here}).enqueue()
    fetcher = Fetcher(
        build_config({"worker_id": "w", "queues": ["low"]}),
        Inflight(),
        threading.Event(),
        cache=cache,
    )
    assert fetcher._preferred() == (here.content_hash,)
    assert [j.pk for j in fetcher.fetch(1)] == [int(newer.id)]
    assert [j.pk for j in fetcher.fetch(1)] == [int(older.id)]  # advisory: never filters


def test_priority_still_comes_first(tmp_path):
    cache = ArtifactCache(tmp_path / "cache", 10_000)
    here, elsewhere = artifacts.register(b"here 2"), artifacts.register(b"elsewhere 2")
    cache.release(cache.acquire(ref_of(here)).name)
    input_tasks.size_of.using(queue_name="low", inputs={"data": here}).enqueue()
    urgent = input_tasks.size_of.using(
        queue_name="low", priority=10, inputs={"data": elsewhere}
    ).enqueue()
    fetcher = Fetcher(
        build_config({"worker_id": "w", "queues": ["low"]}),
        Inflight(),
        threading.Event(),
        cache=cache,
    )
    assert [j.pk for j in fetcher.fetch(1)] == [int(urgent.id)]
