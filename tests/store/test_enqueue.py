"""Enqueue: one job, many in one INSERT, and validation before any write."""

from __future__ import annotations

import json

import pytest
from django.db import connection, transaction
from django.test import override_settings

from dispatch_jobs import store
from dispatch_jobs.exceptions import InvalidJob, PayloadTooLarge
from dispatch_jobs.models import Job, JobState
from tests.factories import JobFactory
from tests.store.support import capture, statements

pytestmark = pytest.mark.django_db

KIB = 1024


def payload_of_size(size: int) -> dict[str, object]:
    """A payload whose compact JSON encoding is exactly ``size`` bytes."""
    empty = store.payload_size("x", {"args": [""], "kwargs": {}})
    return {"args": ["a" * (size - empty)], "kwargs": {}}


def test_enqueue_one_stores_a_pending_row_with_an_id() -> None:
    job = store.enqueue_job(Job(name="tests.jobs.tasks.noop", payload={"args": [1]}))
    row = Job.objects.get(pk=job.pk)
    assert row.state == JobState.PENDING
    assert row.payload == {"args": [1]}
    assert row.run_at is not None and row.created_at is not None


def test_enqueue_forces_pending_state() -> None:
    job = store.enqueue_job(Job(name="tests.jobs.tasks.noop", state=JobState.COMPLETED))
    assert Job.objects.get(pk=job.pk).state == JobState.PENDING


def test_enqueue_many_is_one_insert() -> None:
    jobs = JobFactory.build_batch(25)
    # One INSERT, unless the backend caps a statement's parameters below 25 rows'
    # worth (Django 5.2 on SQLite: 999), when bulk_create splits at that cap.
    per_insert = connection.ops.bulk_batch_size(Job._meta.concrete_fields, jobs)
    with capture() as ctx:
        created = store.enqueue_jobs(jobs)
    assert len(statements(ctx, "INSERT")) == -(-25 // min(per_insert, 25))
    assert len({job.pk for job in created}) == 25 and all(job.pk for job in created)
    assert Job.objects.count() == 25


def test_enqueue_many_empty_writes_nothing() -> None:
    with capture() as ctx:
        assert store.enqueue_jobs([]) == []
    assert ctx.captured_queries == []


def test_enqueue_fills_resource_columns_from_resources() -> None:
    job = JobFactory.create(resources={"cpu": 500, "memory": 2048, "fpga": 1, "tpu": 2})
    assert (job.cpu, job.memory, job.disk, job.gpu) == (500, 2048, 0, 0)
    assert job.custom_keys == ",fpga,tpu,"


def test_payload_at_default_cap_is_accepted() -> None:
    job = store.enqueue_job(Job(name="t", payload=payload_of_size(64 * KIB)))
    assert Job.objects.filter(pk=job.pk).exists()


def test_payload_over_default_cap_is_refused_before_any_write() -> None:
    JobFactory.create()
    with capture() as ctx, pytest.raises(PayloadTooLarge, match="65537 bytes"):
        store.enqueue_job(Job(name="t", payload=payload_of_size(64 * KIB + 1)))
    assert ctx.captured_queries == []
    assert Job.objects.count() == 1


@override_settings(DISPATCH_JOBS={"MAX_PAYLOAD_BYTES": 100})
def test_payload_cap_is_configurable() -> None:
    store.enqueue_job(Job(name="t", payload=payload_of_size(100)))
    with pytest.raises(PayloadTooLarge, match="cap of 100 bytes"):
        store.enqueue_job(Job(name="t", payload=payload_of_size(101)))
    assert Job.objects.count() == 1


def test_one_bad_job_in_many_writes_none() -> None:
    good = JobFactory.build_batch(3)
    bad = JobFactory.build(payload=payload_of_size(64 * KIB + 1))
    with pytest.raises(PayloadTooLarge):
        store.enqueue_jobs([*good, bad])
    assert Job.objects.count() == 0


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"name": ""}, "name"),
        ({"name": "x" * 256}, "name"),
        ({"queue": ""}, "Queue"),
        ({"priority": "high"}, "priority"),
        ({"max_retries": -1}, "max_retries"),
        ({"payload": {"args": [object()]}}, "JSON"),
        ({"resources": {"memory": -1}}, "memory"),
    ],
)
def test_invalid_job_is_refused_before_any_write(fields: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidJob, match=message):
        store.enqueue_job(JobFactory.build(**fields))
    assert Job.objects.count() == 0


def test_enqueue_of_an_existing_job_is_refused() -> None:
    job = JobFactory.create()
    with pytest.raises(InvalidJob, match="already exists"):
        store.enqueue_job(job)


def test_enqueue_rolls_back_with_the_callers_transaction() -> None:
    class Abort(Exception):
        pass

    with pytest.raises(Abort), transaction.atomic():
        store.enqueue_job(JobFactory.build())
        store.enqueue_jobs(JobFactory.build_batch(2))
        assert Job.objects.count() == 3
        raise Abort
    assert Job.objects.count() == 0


@pytest.mark.parametrize(
    "value",
    [
        {"args": [1, "é", None, True, 2.5, 1e300], "kwargs": {"k": {"n": [[], {}]}}},
        {"args": ['\u2028\u2029"\\\t'], "kwargs": {"1": -0.0}},
        "plain text",
        [],
    ],
)
def test_the_payload_encoding_is_compact_json_with_utf8_kept(value: object) -> None:
    expected = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    assert store.encode_payload("x", value) == expected
    assert store.payload_size("x", value) == len(expected.encode())


@pytest.mark.parametrize("value", [float("nan"), {"a": object()}, {"b": b"bytes"}])
def test_a_value_json_cannot_hold_is_refused_by_name(value: object) -> None:
    with pytest.raises(InvalidJob, match="Payload of 'named' is not JSON-serialisable"):
        store.encode_payload("named", value)


def test_a_circular_payload_is_refused_not_a_crash() -> None:
    loop: list[object] = []
    loop.append(loop)
    with pytest.raises(InvalidJob, match="nested too deeply or circular"):
        store.encode_payload("named", {"args": [loop], "kwargs": {}})
