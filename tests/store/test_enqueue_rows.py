"""``insert_jobs``: rows given as columns store what the ORM stores for them.

The tasks backend writes through ``insert_jobs`` with values shared by the batch
and values of each row's own. On PostgreSQL that is one statement (shared values
as parameters, or the model's default inlined when equal to it; own values as
JSON arrays); elsewhere the ORM. Each test compares with ``Job(**values)`` saved
by the ORM, column by column.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection

from dispatch_jobs.models import Job, JobState
from dispatch_jobs.store import EncodedJSON, NewJobs, encode_payload, insert_jobs
from dispatch_jobs.store.engines import postgresql_insert
from tests.store.support import capture, db_now, unwrapped

pytestmark = pytest.mark.django_db

NAME = "tests.jobs.tasks.add"


def orm(values: dict[str, Any]) -> int:
    """The reference: the same values through the model and the ORM's insert."""
    unwrapped = {k: v.value if isinstance(v, EncodedJSON) else v for k, v in values.items()}
    job = Job(**{"state": JobState.PENDING, **unwrapped})
    job.save(force_insert=True)
    return job.pk


def stored(job_id: int) -> dict[str, Any]:
    """Every column as stored, but the id and the insert's clock; a run_at that is
    the insert's clock (the database default) reads as "now"."""
    row: dict[str, Any] = dict(Job.objects.values().get(pk=job_id))
    if row["run_at"] == row["created_at"]:
        row["run_at"] = "now"
    for column in ("id", "created_at", "updated_at"):
        del row[column]
    return row


def rows_of(new: NewJobs) -> list[dict[str, Any]]:
    return [
        {**new.shared, **{attname: values[i] for attname, values in new.own.items()}}
        for i in range(new.size)
    ]


def payload(value: object) -> EncodedJSON:
    return EncodedJSON(value, encode_payload(NAME, value))


def check(new: NewJobs) -> list[tuple[Any, ...]]:
    """Insert ``new`` and its rows one by one through the ORM; the same columns."""
    expected = [stored(orm(row)) for row in rows_of(new)]
    returned = insert_jobs(new)
    assert [stored(job_id) for job_id, _ in returned] == expected
    assert [created for _, created in returned] == [
        Job.objects.get(pk=job_id).created_at for job_id, _ in returned
    ]
    return returned


def test_every_kind_of_column_may_vary_per_row() -> None:
    later = db_now(timedelta(hours=1))
    returned = check(
        NewJobs(
            3,
            {"name": NAME, "queue": "high", "max_retries": 5},
            {
                "payload": [payload({"args": [i], "kwargs": {"é": "✓"}}) for i in range(3)],
                "priority": [0, 7, -3],
                "timeout": [None, timedelta(seconds=90, microseconds=7), timedelta(days=2)],
                "lease_ttl": [timedelta(seconds=1), None, None],
                "run_at": [later, later, later],
                "scope_app_id": ["a", "", "b"],
                "scope_org_id": ["", "o", "o"],
                "resources": [{}, {"memory": 10, "fpga": 1}, {"cpu": 250}],
                "resource_limits": [{}, {"memory": 10}, {}],
                "cpu": [0, 0, 250],
                "memory": [0, 10, 0],
                "custom_keys": ["", ",fpga,", ""],
                "return_value": [None, {"x": [1.0]}, [True]],
            },
        )
    )
    assert [job_id for job_id, _ in returned] == sorted(job_id for job_id, _ in returned)


def test_shared_values_of_every_kind() -> None:
    check(
        NewJobs(
            2,
            {
                "name": NAME,
                "queue": "low",
                "priority": 9,
                "timeout": timedelta(minutes=5),
                "lease_ttl": timedelta(seconds=20),
                "scope_app_id": "app",
                "resources": {"memory": 2048, "gpu": 500},
                "resource_limits": {"memory": 4096},
                "memory": 2048,
                "gpu": 500,
                "resource_class": "highmem",
                "run_at": db_now(timedelta(minutes=1)),
            },
            {"payload": [payload({"args": [1]}), payload({"args": [2]})]},
        )
    )


@pytest.mark.parametrize("value", [{"n": 1}, {"n": 1.0}, {"n": True}, [0], [False], {}, []])
def test_shared_json_keeps_its_types(value: object) -> None:
    """Equal in Python (1 == 1.0 == True; [] == [] as a default), not in JSON."""
    (job_id, _), _ = check(NewJobs(2, {"name": NAME, "return_value": value}, {}))
    stored_value = Job.objects.get(pk=job_id).return_value
    assert json.dumps(stored_value) == json.dumps(value)


def test_values_equal_to_the_model_defaults_and_others_alternate() -> None:
    """A value equal to the column's default may be written by the inlined
    default; a different one in the next statement must not reuse that shape."""
    for queue, priority, retries in [("default", 0, 3), ("high", 5, 0), ("default", 0, 3)]:
        for size in (1, 3):
            own = {"payload": [payload({"args": [i]}) for i in range(size)]}
            shared = {"name": NAME, "queue": queue, "priority": priority, "max_retries": retries}
            check(NewJobs(size, shared, own))


def test_identical_rows_and_a_single_row() -> None:
    check(NewJobs(4, {"name": NAME, "payload": payload({"args": []})}, {}))
    check(NewJobs(1, {"name": NAME}, {"payload": [payload({"args": ["only"]})]}))


def test_the_state_is_always_pending() -> None:
    (job_id, _), *_ = insert_jobs(NewJobs(2, {"name": NAME, "state": JobState.COMPLETED}, {}))
    assert Job.objects.get(pk=job_id).state == JobState.PENDING


def test_a_payload_is_sent_as_encoded() -> None:
    value = {"args": ["é ✓ \u2028", 1.5, None], "kwargs": {"k": [1, {"n": None}]}}
    (job_id, _), *_ = insert_jobs(NewJobs(1, {"name": NAME, "payload": payload(value)}, {}))
    assert Job.objects.get(pk=job_id).payload == value


def test_nothing_to_insert_runs_no_query() -> None:
    with capture() as ctx:
        assert insert_jobs(NewJobs(0, {"name": NAME}, {})) == []
    assert ctx.captured_queries == []


def test_statement_shapes_past_the_bound_start_over(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(postgresql_insert, "_MAX_SHAPES", 1)
    for priority in (0, 1, 2, 0):
        check(NewJobs(2, {"name": NAME, "priority": priority}, {"timeout": [None, None]}))


def test_postgresql_writes_one_statement_with_only_non_default_parameters() -> None:
    if connection.vendor != "postgresql":
        pytest.skip(f"{connection.vendor} inserts through the ORM")
    with capture() as ctx:
        insert_jobs(NewJobs(1, {"name": NAME, "queue": "default", "priority": 3}, {}))
    (sql,) = [unwrapped(q["sql"]) for q in ctx.captured_queries]
    assert sql.startswith("INSERT") and "'default'::varchar" in sql and "3::integer" in sql
