"""Every built-in filter and sort of the job list is served by an index (PostgreSQL
EXPLAIN of the very SQL the page sent)."""

from __future__ import annotations

import itertools
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from dispatch_jobs import store
from dispatch_jobs.admin.jobs import JOB_SORT_KEYS

from . import builders

pytestmark = pytest.mark.django_db
URL = reverse("admin:dispatch_jobs_job_changelist")
FILTERS = [
    "",
    "state=failed",
    "queue=mail",
    "task=app.tasks.a",
    "priority=high",
    "priority=low",
    "app=app1",
    "org=org1",
    f"worker={builders.WORKER}",
    "enqueued=1h",
    "enqueued=older",
    "finished=24h",
    "finished=older",
]
EQUALITY_FILTERS = ["state", "queue", "task", "app", "org", "worker"]


@pytest.fixture
def seeded():
    if connection.vendor != "postgresql":
        pytest.skip(
            "plan inspection uses PostgreSQL's EXPLAIN; SQLite's and MariaDB's plans are "
            "not comparable, and the same indexes exist there"
        )
    # A large unremarkable majority and small matching sets, so that the planner
    # has every reason to seek through an index for each equality filter.
    builders.enqueue(600, name="app.tasks.b")
    builders.enqueue(
        10, name="app.tasks.a", queue="mail", scope_app_id="app1", scope_org_id="org1", priority=2
    )
    builders.failed(20)
    builders.completed(20)
    # One finished app.tasks.a job puts its name in the rollup: a known name,
    # which the task filter matches exactly (through the name index).
    builders.completed(1, name="app.tasks.a", queue="mail")
    store.roll_up_finished_jobs(lag=timedelta(0))
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE dispatch_jobs_job")


def _job_queries(client, query: str) -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(f"{URL}?{query}")
    assert response.status_code == 200
    return [q["sql"] for q in captured.captured_queries if '"dispatch_jobs_job"' in q["sql"]]


def _plan(sql: str, *forbidden: str) -> str:
    with connection.cursor() as cursor:
        # Forbid the sequential scan (and whatever else is named): if no index can
        # serve the query the planner is forced to pick it anyway and it shows.
        for setting in ("enable_seqscan", *forbidden):
            cursor.execute(f"SET LOCAL {setting} = off")
        cursor.execute("EXPLAIN " + sql)
        return "\n".join(row[0] for row in cursor.fetchall())


def test_every_filter_and_sort_combination_uses_an_index(admin_client_, seeded):
    # One test over all combinations: the seeding is the slow part, done once.
    failures = []
    for filter_, sort in itertools.product(FILTERS, [k.value for k in JOB_SORT_KEYS]):
        query = "&".join(p for p in (filter_, f"sort={sort}") if p)
        queries = _job_queries(admin_client_, query)
        assert queries, query
        for sql in queries:
            plan = _plan(sql)
            if "Seq Scan on dispatch_jobs_job" in plan:
                failures.append(f"{query}: {sql}\n{plan}")
    assert failures == []


def test_each_sort_order_is_read_in_index_order(admin_client_, seeded):
    for sort in [k.value for k in JOB_SORT_KEYS]:
        queries = _job_queries(admin_client_, f"sort={sort}")
        page_query = next(q for q in queries if "ORDER BY" in q)
        # With sorting priced out, a plan still sorting would mean no index has the order.
        plan = _plan(page_query, "enable_sort")
        assert "Sort" not in plan.replace("Sort Key", ""), plan
        assert "Index" in plan


def test_each_equality_filter_seeks_in_an_index(admin_client_, seeded):
    values = {
        "state": "failed",
        "queue": "mail",
        "task": "app.tasks.a",
        "app": "app1",
        "org": "org1",
        "worker": builders.WORKER,
    }
    for name in EQUALITY_FILTERS:
        queries = _job_queries(admin_client_, f"{name}={values[name]}")
        page_query = next(q for q in queries if "ORDER BY" in q)
        plan = _plan(page_query)
        assert "Index Cond" in plan, f"{name}: {plan}"


def test_argument_search_uses_the_gin_index(admin_client_, seeded):
    queries = _job_queries(admin_client_, "q=%7B%22user%22%3A+1%7D")
    page_query = next(q for q in queries if "ORDER BY" in q)
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_indexscan = off")  # leave bitmap (GIN) scans only
        cursor.execute("EXPLAIN " + page_query)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "dj_job_payload_gin" in plan, plan


def test_a_part_of_a_task_name_reads_newest_first_and_stops_at_a_page(admin_client_, seeded):
    """No index serves ``LIKE '%part%'`` (docs/admin.md, "Task names"): the page
    walks the primary key newest-first and stops once it has a page."""
    for query in ("q=tasks.a", "task=tasks.a"):
        queries = _job_queries(admin_client_, query)
        page_query = next(q for q in queries if "ORDER BY" in q)
        assert "LIKE" in page_query.upper() and "LIMIT" in page_query.upper(), page_query
        plan = _plan(page_query)
        assert plan.lstrip().startswith("Limit"), plan
        assert "Index Scan Backward using dispatch_jobs_job_pkey" in plan, plan
