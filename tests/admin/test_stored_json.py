"""No stored JSON value fails a page: every JSON column of every table, set by SQL
to what the app itself never writes there (a string, a number, the wrong
container, JSON nested deeper than Python's decoder follows), and every admin page
that shows those rows, and the job's result, still answer."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.cache import cache
from django.db import connection
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
