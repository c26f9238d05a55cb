"""The usage-driven estimator: its arithmetic (log2 buckets, nearest-rank p95,
x1.2), its threshold (20 samples of one rung, never pooled), its clamp
(declared floor, largest live capacity, declared limit), and enqueues it raised
or left alone."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest

from dispatch_jobs import artifacts, estimates, store
from dispatch_jobs.estimates import Sample, bucket_of, bucket_range, clamp, estimate_from
from dispatch_jobs.models import Job, Usage
from tests.jobs import input_tasks

MiB = 1024**2
ESTIMATED = "tests.jobs.input_tasks.estimated"


def rss_samples(values, executor="subprocess", cpu=None, wall=timedelta(seconds=1)):
    return [Sample(executor, v, cpu, wall) for v in values]


# --- arithmetic


@pytest.mark.parametrize(
    ("size", "bucket"), [(0, 0), (1, 1), (2, 2), (3, 2), (1023, 10), (1024, 11), (MiB, 21)]
)
def test_log2_buckets(size, bucket):
    assert bucket_of(size) == bucket
    low, high = bucket_range(bucket)
    assert low <= size < high


def test_nearest_rank_p95():
    assert estimates.percentile(list(range(1, 101))) == 95
    assert estimates.percentile(list(range(20, 0, -1))) == 19  # ceil(0.95 * 20) = 19th
    assert estimates.percentile([7]) == 7


def test_memory_is_p95_of_peak_rss_times_1_2():
    values = [100 * MiB] * 18 + [200 * MiB, 900 * MiB]  # the 19th of 20 is 200 MiB
    found = estimate_from(rss_samples(values))
    assert found is not None
    assert found.memory == math.ceil(200 * MiB * 1.2)
    assert (found.executor, found.samples, found.cpu) == ("subprocess", 20, None)


def test_cpu_is_p95_of_cores_used_in_millicores():
    samples = [
        Sample("subprocess", 0, timedelta(seconds=n / 20), timedelta(seconds=1))
        for n in range(1, 21)
    ]
    found = estimate_from(samples)
    assert found is not None
    assert found.cpu == math.ceil(0.95 * 1000 * 1.2)  # p95 = 19/20 of a core
    assert found.memory is None  # no RSS measured by this rung


# --- the threshold


def test_nineteen_samples_say_nothing():
    assert estimate_from(rss_samples([MiB] * 19)) is None
    assert estimate_from(rss_samples([MiB] * 20)) is not None


def test_rungs_are_never_pooled():
    mixed = rss_samples([MiB] * 15, "subprocess") + rss_samples([2 * MiB] * 15, "container")
    assert estimate_from(mixed) is None  # 30 samples, but no rung has 20
    more = mixed + rss_samples([2 * MiB] * 5, "container")
    found = estimate_from(more)
    assert found is not None and found.executor == "container"
    assert found.memory == math.ceil(2 * MiB * 1.2)


def test_the_in_process_rung_measures_no_memory():
    assert estimate_from(rss_samples([0] * 30, "in-process")).memory is None


# --- the clamp


def test_clamp_to_the_largest_live_capacity():
    capacities = [{"memory": 1024 * MiB}, {"memory": 512 * MiB}, {"cpu": 4000}]
    assert clamp({"memory": 4096 * MiB}, {}, {}, capacities) == {"memory": 1024 * MiB}


def test_clamp_never_lowers_the_declared_floor():
    assert clamp({"memory": 10 * MiB}, {"memory": 64 * MiB}, {}, []) == {}
    assert clamp({"memory": 100 * MiB}, {"memory": 64 * MiB}, {}, []) == {"memory": 100 * MiB}


def test_clamp_to_the_declared_limit():
    assert clamp({"memory": 900 * MiB}, {}, {"memory": 256 * MiB}, []) == {"memory": 256 * MiB}


def test_no_capacity_declared_leaves_the_estimate():
    assert clamp({"cpu": 2500}, {"cpu": 100}, {}, [{"memory": MiB}]) == {"cpu": 2500}


# --- at enqueue


def record(n: int, rss: int, input_bytes: int = 0, name: str = ESTIMATED) -> None:
    store.record_usages(
        [
            Usage(
                job_id=i + 1,
                name=name,
                queue="default",
                attempt=1,
                status="completed",
                input_bytes=input_bytes,
                wall_time=timedelta(seconds=1),
                peak_rss=rss,
                executor="subprocess",
            )
            for i in range(n)
        ]
    )


@pytest.mark.django_db
def test_an_enqueue_the_estimate_raised():
    record(20, 300 * MiB)
    job = Job.objects.get(pk=input_tasks.estimated.enqueue().id)
    assert job.memory == math.ceil(300 * MiB * 1.2)
    assert job.resources["memory"] == job.memory


@pytest.mark.django_db
def test_below_the_threshold_the_floor_stays():
    record(19, 300 * MiB)
    job = Job.objects.get(pk=input_tasks.estimated.enqueue().id)
    assert job.memory == 64 * MiB


@pytest.mark.django_db
def test_the_bucket_is_the_inputs_size():
    record(20, 300 * MiB, input_bytes=5000)  # bucket 13
    small = artifacts.register(b"x" * 100)  # bucket 7: no samples
    large = artifacts.register(b"y" * 6000)  # bucket 13
    plain = input_tasks.estimated.using(inputs={"data": small}).enqueue()
    sized = input_tasks.estimated.using(inputs={"data": large}).enqueue()
    assert Job.objects.get(pk=plain.id).memory == 64 * MiB
    assert Job.objects.get(pk=sized.id).memory == math.ceil(300 * MiB * 1.2)


@pytest.mark.django_db
def test_clamped_to_the_largest_live_worker():
    record(20, 4096 * MiB)
    for name, memory in (("w1", 1024 * MiB), ("w2", 2048 * MiB)):
        store.register_worker(
            name,
            hostname="h",
            pid=1,
            queues=["default"],
            concurrency=1,
            capacity={"memory": memory},
        )
    job = Job.objects.get(pk=input_tasks.estimated.enqueue().id)
    assert job.memory == 2048 * MiB


@pytest.mark.django_db
def test_the_per_enqueue_override_still_wins():
    record(20, 300 * MiB)
    result = input_tasks.estimated.using(resources={"memory": "100Mi"}).enqueue()
    assert Job.objects.get(pk=result.id).memory == 100 * MiB


@pytest.mark.django_db
def test_opt_in_per_task_or_by_the_setting(settings):
    record(20, 300 * MiB, name="tests.jobs.input_tasks.not_estimated")
    job = Job.objects.get(pk=input_tasks.not_estimated.enqueue().id)
    assert job.memory == 64 * MiB
    settings.DISPATCH_JOBS = {"ESTIMATE_RESOURCES": True}
    job = Job.objects.get(pk=input_tasks.not_estimated.enqueue().id)
    assert job.memory == math.ceil(300 * MiB * 1.2)


# --- the admin's usage summary


@pytest.mark.django_db
def test_the_usage_summary_shows_declared_and_estimated_per_bucket(admin_client):
    from django.urls import reverse

    record(20, 300 * MiB)
    record(3, 10 * MiB, input_bytes=5000)
    response = admin_client.get(reverse("admin:dispatch_jobs_usage_summary"), {"window": "1h"})
    assert response.status_code == 200
    rows = {(r.name, r.bucket): r for r in response.context["buckets"]}
    full, sparse = rows[(ESTIMATED, 0)], rows[(ESTIMATED, 13)]
    assert (full.samples, full.estimated_memory, full.declared) == (
        20,
        "360.0 MiB",
        "memory 64.0 MiB",
    )
    assert full.opted_in and full.estimate.executor == "subprocess"
    assert (sparse.samples, sparse.estimated_memory, sparse.sizes) == (3, "—", "4.0 KiB – 8.0 KiB")
    assert b"360.0 MiB" in response.content
