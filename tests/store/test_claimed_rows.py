"""A claimed job is the row as the ORM reads it, however it was built.

The claim builds hundreds of jobs per call from its ``RETURNING`` rows; it skips
the model's constructor and decodes empty JSON containers itself. Neither may
show: every field equals what ``Job.objects.get`` reads, JSON containers are
fresh objects, and a ``post_init`` receiver still sees every claimed job.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.db.models.signals import post_init

from dispatch_jobs import store
from dispatch_jobs.models import Job
from tests.store.support import claim
from tests.stored_json import UNREADABLE

pytestmark = pytest.mark.django_db


def _fields(job: Job) -> dict[str, Any]:
    return {f.attname: getattr(job, f.attname) for f in Job._meta.concrete_fields}


def _enqueue(make_job: Any) -> list[Job]:
    return store.enqueue_jobs(
        [
            make_job(),
            make_job(
                payload={"args": [1, "é", None, [], {}], "kwargs": {"k": {"n": [1.5]}}},
                resources={"memory": 2**20, "team-x": 2},
                timeout=timedelta(seconds=7),
                lease_ttl=timedelta(seconds=30),
                scope_app_id="app",
                scope_org_id="org",
            ),
        ]
    )


def test_claimed_jobs_equal_what_the_orm_reads(make_job: Any) -> None:
    _enqueue(make_job)
    claimed = claim(limit=10, worker_id="w1", lease_ttl=timedelta(seconds=60))
    assert len(claimed) == 2
    for job in claimed:
        read = Job.objects.get(pk=job.pk)
        assert _fields(job) == _fields(read)
        assert {k: type(v) for k, v in _fields(job).items()} == {
            k: type(v) for k, v in _fields(read).items()
        }
        assert job._state.adding is False
        assert job._state.db == "default"
        assert job == read
    # Empty containers are each job's own: changing one changes no other.
    first, second = claimed
    first.attempts.append({"n": 1})
    assert second.attempts == []
    job = claimed[0]
    job.last_error = "saved through the ORM"
    job.save(update_fields=["last_error"])
    assert Job.objects.get(pk=job.pk).last_error == "saved through the ORM"


@pytest.mark.parametrize("receiver", [False, True], ids=["built", "post_init"])
def test_a_value_no_driver_reads_back_is_its_own_jobs_problem(
    make_job: Any, receiver: bool, request: pytest.FixtureRequest
) -> None:
    """A claimed row holding a value the driver or Django cannot convert (an
    infinite time on PostgreSQL, a day that does not exist in SQLite's text) is
    still claimed, with None there and ``undecodable`` naming the column; every
    other claimed row reads exactly as the ORM reads it."""
    from django.db import connection

    if receiver:
        request.getfixturevalue("initialised")  # the model's constructor path
    cases = [c for c in UNREADABLE[connection.vendor] if c[0] != "run_at"]
    jobs = store.enqueue_jobs([make_job() for _ in range(4 + len(cases))])
    odd = {}
    table = connection.ops.quote_name(Job._meta.db_table)
    for job, (column, literal) in zip(jobs, cases, strict=False):
        with connection.cursor() as cursor:
            quoted = connection.ops.quote_name(column)
            cursor.execute(f"UPDATE {table} SET {quoted} = {literal} WHERE id = %s", [job.pk])
        odd[job.pk] = column
    claimed = claim(limit=20, worker_id="w1", lease_ttl=timedelta(seconds=60))
    assert sorted(j.pk for j in claimed) == sorted(j.pk for j in jobs)
    for job in claimed:
        if job.pk in odd and connection.vendor != "mysql":  # MariaDB reads a zero date as None
            column = odd[job.pk]
            assert set(job.undecodable) == {column} and getattr(job, column) is None
            others = {k: v for k, v in _fields(job).items() if k != column}
            assert others == Job.objects.filter(pk=job.pk).values(*others).get()
        else:
            assert not getattr(job, "undecodable", None)
            assert _fields(job) == _fields(Job.objects.get(pk=job.pk))


@pytest.fixture
def initialised() -> Iterator[list[Job]]:
    seen: list[Job] = []

    def receiver(sender: type[Job], instance: Job, **kwargs: Any) -> None:
        seen.append(instance)

    post_init.connect(receiver, sender=Job)
    yield seen
    post_init.disconnect(receiver, sender=Job)


def test_a_post_init_receiver_sees_every_claimed_job(make_job: Any, initialised: list[Job]) -> None:
    _enqueue(make_job)
    initialised.clear()
    claimed = claim(limit=10, worker_id="w1", lease_ttl=timedelta(seconds=60))
    assert len(claimed) == 2
    # Each built once (in the order the engine read them, which the claim reorders).
    assert sorted(id(job) for job in initialised) == sorted(id(job) for job in claimed)


@pytest.mark.parametrize(
    "text",
    [None, "{}", "[]", '{"a": [1, 2.5, null]}', "[1, {}]", '"s"', "3", "null", "{not json", ""],
)
def test_the_row_decoder_decodes_a_json_column_as_django_does(text: str | None) -> None:
    """``job_rows._decoded`` (the claim's one loop over a row's JSON columns where
    they are Django's only converters) gives what ``JSONField.from_db_value``
    gives for the same text, text that is not JSON included."""
    from django.db import connection

    from dispatch_jobs.store.engines.job_rows import _decoded

    field = Job._meta.get_field("payload")
    column = field.get_col(Job._meta.db_table)
    expected = field.from_db_value(text, column, connection)
    [decoded] = _decoded([text], [0])
    assert decoded == expected and type(decoded) is type(expected)


def test_json_nested_deeper_than_the_decoder_follows_is_kept_as_its_text() -> None:
    """A value the databases store but ``json.loads`` cannot follow (RecursionError)
    is text that is not JSON to both readers: the row's model field and the claim's
    loop give the text back, for the worker to fail that job alone."""
    from django.db import connection

    from dispatch_jobs.models.stored_json import read_stored
    from dispatch_jobs.store.engines.job_rows import _decoded

    text = "[" * 100_000 + "]" * 100_000
    field = Job._meta.get_field("payload")
    assert field.from_db_value(text, field.get_col(Job._meta.db_table), connection) == text
    assert _decoded([text], [0]) == [text]
    assert read_stored(text) == text
    assert read_stored("[[1]]") == [[1]] and read_stored("{not json") == "{not json"


def test_the_one_loop_serves_only_where_json_is_all_django_converts() -> None:
    from django.db import connection

    from dispatch_jobs.store.engines.job_rows import _plain_json_positions

    fields = Job._meta.concrete_fields
    compiler = Job.objects.none().query.get_compiler(connection.alias)
    converters = compiler.get_converters([f.get_col(Job._meta.db_table) for f in fields])
    positions = _plain_json_positions(converters)
    json_columns = [i for i, f in enumerate(fields) if f.get_internal_type() == "JSONField"]
    if connection.vendor == "postgresql":
        assert positions == json_columns
    else:
        # SQLite and MySQL convert more than JSON (datetimes, booleans ...):
        # Django's own converters run there.
        assert positions is None
