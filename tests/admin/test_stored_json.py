"""No stored JSON value fails a page: every JSON column of every table, set by SQL
to what the app itself never writes there (a string, a number, the wrong
container, JSON nested deeper than Python's decoder follows), and every admin page
that shows those rows, and the job's result, still answer."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.core.cache import cache
from django.db import DataError, connection
from django.urls import reverse

from dispatch_jobs import store
from dispatch_jobs.compat import default_task_backend
from dispatch_jobs.models import Job, Schedule, Usage, Worker
from tests.stored_json import deepest_nesting, set_json_text

from . import builders

pytestmark = pytest.mark.django_db(transaction=True)

ODD = {
    "text": '"text"',
    "number": "5",
    "list": '[1, "a", [2]]',
    "object": '{"a": {"b": 1}}',
    "deep": None,  # as deep as the database keeps (see _deep)
}


def _json_columns(model: type) -> list[str]:
    return [f.column for f in model._meta.concrete_fields if f.get_internal_type() == "JSONField"]


def _rows() -> dict[type, object]:
    """One row of each table with JSON columns, through the store."""
    [pending] = builders.enqueue(1, name="tests.jobs.tasks.add")
    [done] = builders.completed(1, name="tests.jobs.tasks.add")
    store.record_usage(
        Usage(
            job_id=done.pk,
            name=done.name,
            queue=done.queue,
            attempt=1,
            status="completed",
            wall_time=timedelta(seconds=1),
        )
    )
    store.register_worker("w-odd", hostname="h", pid=1, queues=["default"], concurrency=1)
    schedule = store.save_schedule(
        Schedule(name="odd", task="tests.jobs.tasks.add", cron="*/5 * * * *", args=[1, 2])
    )
    usage = Usage.objects.get(job_id=done.pk)
    return {
        Job: [pending.pk, done.pk],
        Usage: [usage.pk],
        Worker: ["w-odd"],
        Schedule: [schedule.pk],
    }


def _pages(rows: dict[type, object]) -> list[str]:
    pages = [reverse("admin:app_list", args=["dispatch_jobs"])]
    for model, pks in rows.items():
        prefix = f"admin:{model._meta.app_label}_{model._meta.model_name}"
        pages.append(reverse(f"{prefix}_changelist"))
        if model is not Worker:  # the workers view is a list only
            pages += [reverse(f"{prefix}_change", args=[pk]) for pk in pks]
    pages.append(reverse("admin:dispatch_jobs_usage_summary"))
    pages.append(reverse("admin:dispatch_jobs_queuecontrol_changelist"))
    return pages


@pytest.mark.parametrize("kind", list(ODD))
def test_odd_json_in_every_column_fails_no_page(admin_client, kind: str) -> None:
    rows = _rows()
    text = ODD[kind] or deepest_nesting()
    stored = 0
    for model, pks in rows.items():
        for column in _json_columns(model):
            for pk in pks:
                stored += set_json_text(model, pk, column, text)
    if not stored:
        pytest.skip(f"{connection.vendor} refuses this JSON in every column")
    cache.clear()
    for page in _pages(rows):
        response = admin_client.get(page)
        assert response.status_code == 200, (page, response.status_code)
    for pk in rows[Job]:
        assert default_task_backend.get_result(str(pk)).id == str(pk)


# Times and intervals PostgreSQL keeps that Python cannot hold, and what the admin
# shows for each: the nearest value Python holds.
BEYOND = [
    ("created_at", "'infinity'"),
    ("run_at", "'-infinity'"),
    ("updated_at", "'20000-01-01 00:00:00+00'"),
    ("completed_at", "'infinity'"),
    ("timeout", "'100000000 years'"),
    ("lease_ttl", "'-100000000 years'"),
]


def test_times_python_cannot_hold_read_as_the_nearest_it_can(admin_client) -> None:
    """PostgreSQL keeps ``infinity``, years past 9999 and intervals past
    ``timedelta``; every admin page that reads such a row, and its result, show
    the nearest value Python holds instead of failing."""
    if connection.vendor != "postgresql":
        pytest.skip("only PostgreSQL keeps times and intervals past Python's range")
    task = "tests.jobs.tasks.add"
    pending, done = builders.enqueue(1, name=task)[0], builders.completed(1, name=task)[0]
    table = connection.ops.quote_name(Job._meta.db_table)
    with connection.cursor() as cursor:
        for column, literal in BEYOND:
            cursor.execute(f"UPDATE {table} SET {column} = {literal} WHERE id = %s", [done.pk])
            if column != "completed_at":
                cursor.execute(
                    f"UPDATE {table} SET {column} = {literal} WHERE id = %s", [pending.pk]
                )
    cache.clear()
    pages = [
        reverse("admin:app_list", args=["dispatch_jobs"]),
        reverse("admin:dispatch_jobs_job_changelist"),
        reverse("admin:dispatch_jobs_job_changelist") + "?o=created",
        reverse("admin:dispatch_jobs_job_changelist") + "?state=completed",
        reverse("admin:dispatch_jobs_job_change", args=[pending.pk]),
        reverse("admin:dispatch_jobs_job_change", args=[done.pk]),
    ]
    for page in pages:
        response = admin_client.get(page)
        assert response.status_code == 200, page
    result = default_task_backend.get_result(str(done.pk))
    assert result.enqueued_at == datetime.max.replace(tzinfo=UTC)
    assert result.finished_at == datetime.max.replace(tzinfo=UTC)
    # Outside the admin and the result lookup the project's queries are as before.
    with pytest.raises(DataError):
        Job.objects.get(pk=done.pk)
