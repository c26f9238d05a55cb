"""Small helpers the conformance suite shares."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from django.db import connection, models
from django.test.utils import CaptureQueriesContext

from dispatch_jobs import store
from dispatch_jobs.models import Job
from dispatch_jobs.store import ClaimOptions


def claim(queues: Sequence[str] = ("default",), limit: int = 10, **opts: Any) -> list[Job]:
    """``store.claim_jobs`` with the suite's defaults (queue ``default``, limit 10)."""
    return store.claim_jobs(ClaimOptions(queues=list(queues), limit=limit, **opts))


def ids(rows: Sequence[models.Model]) -> list[int]:
    return [row.pk for row in rows]


def moment(job_id: int, column: str) -> datetime:
    """A timestamp column of a job as stored; fails the test when it is NULL."""
    value = Job.objects.values_list(column, flat=True).get(pk=job_id)
    assert isinstance(value, datetime), f"job {job_id}: {column} is {value!r}"
    return value


def db_now(offset: timedelta = timedelta(0)) -> datetime:
    """The database's clock (+ offset): what readiness and expiry compare with."""
    return store.db.database_now() + offset


def snapshot(job_id: int) -> dict[str, Any]:
    """Every column of a row as stored, to prove a refused write changed nothing."""
    return dict(Job.objects.filter(pk=job_id).values().get())


def unwrapped(sql: str) -> str:
    """A captured statement without the savepoint that an enqueue inside a
    transaction (every test's) sends in the same round trip as its INSERT."""
    prefix, suffix = (
        "SAVEPOINT dispatch_jobs_enqueue; ",
        "; RELEASE SAVEPOINT dispatch_jobs_enqueue",
    )
    if sql.startswith(prefix) and sql.endswith(suffix):
        return sql[len(prefix) : -len(suffix)]
    return sql


def statements(context: CaptureQueriesContext, verb: str) -> list[str]:
    """The captured SQL statements starting with ``verb`` (INSERT, SELECT, ...).
    PostgreSQL's many-row INSERT is wrapped in ``WITH new AS (INSERT ...)`` (it
    returns one row): an INSERT all the same."""
    sqls = (unwrapped(q["sql"]) for q in context.captured_queries)
    return [sql for sql in sqls if _verb(sql).startswith(verb)]


def _verb(sql: str) -> str:
    text = sql.lstrip().upper()
    wrapper = "WITH NEW AS ("
    return text[len(wrapper) :] if text.startswith(wrapper + "INSERT") else text


def capture() -> CaptureQueriesContext:
    return CaptureQueriesContext(connection)
