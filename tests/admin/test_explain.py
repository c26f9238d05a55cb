"""Every built-in filter and sort of the job list is served by an index: the
plan of the very SQL the page sent, on each database (``tests.plans``)."""

from __future__ import annotations

import itertools
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from dispatch_jobs import store
from dispatch_jobs.admin.jobs import JOB_SORT_KEYS
from dispatch_jobs.models import Job
from tests import plans

from . import builders

# On MariaDB the seeding ends with ANALYZE TABLE, which commits: a transactional
# test there. Elsewhere the plans are read inside the test's transaction
# (tests.plans prices plans out with SET LOCAL).
pytestmark = pytest.mark.django_db(transaction=connection.vendor == "mysql")
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
# Each equality filter, a value few rows have, and the index that serves it.
EQUALITY_FILTERS = {
    "state": ("failed", "dj_job_state_id"),
    "queue": ("mail", "dj_job_queue_id"),
    "task": ("app.tasks.a", "dj_job_name_id"),
    "app": ("app1", "dj_job_scope_id"),
    "org": ("org1", "dj_job_org_id"),
    "worker": (builders.WORKER, "dj_job_worker_id"),
}


@pytest.fixture
def seeded():
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
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            # Earlier tests on this database rolled back their rows, but not the
            # index pages those rows took (nor a GIN index's pending list): the
            # planner would price each index by its size, not by these rows.
            cursor.execute(f"REINDEX TABLE {plans.TABLE}")
            cursor.execute(f"ANALYZE {plans.TABLE}")
    if connection.vendor == "mysql":
        # MariaDB cannot price a plan out: on a table this small it reads every
        # row and sorts them, whatever the indexes. At a size where a page is a
        # small part of the table, it plans as it would in production.
        _grow_the_majority(32)
        # And with statistics of that size: InnoDB's persistent statistics are
        # recalculated in the background after a tenth of the table changes, so
        # without this the planner may still price the seeded few hundred rows.
        with connection.cursor() as cursor:
            cursor.execute(f"ANALYZE TABLE {plans.TABLE}")
            cursor.fetchall()


def _grow_the_majority(times: int) -> None:
    """Copy the unremarkable pending rows ``times`` times over (one INSERT each)."""
    columns = ", ".join(
        connection.ops.quote_name(f.column)
        for f in Job._meta.concrete_fields
        if not f.primary_key and f.name != "replay_of"
    )
    with connection.cursor() as cursor:
        for _ in range(times):
            cursor.execute(
                f"INSERT INTO {plans.TABLE} ({columns}) SELECT {columns} FROM {plans.TABLE} "
                "WHERE name = 'app.tasks.b' AND state = 'pending' LIMIT 600"
            )


@pytest.fixture
def postgresql_only() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("an index of PostgreSQL's own (GIN) or its planner's choice")


def _job_queries(client, query: str) -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(f"{URL}?{query}")
    assert response.status_code == 200
    return plans.job_table_queries(captured.captured_queries)


def test_every_filter_and_sort_combination_uses_an_index(admin_client_, seeded):
    # One test over all combinations: the seeding is the slow part, done once.
    failures = []
    for filter_, sort in itertools.product(FILTERS, [k.value for k in JOB_SORT_KEYS]):
        query = "&".join(p for p in (filter_, f"sort={sort}") if p)
        queries = _job_queries(admin_client_, query)
        assert queries, query
        for sql in queries:
            plan = plans.explain(sql)
            if plans.scans_the_table(plan):
                failures.append(f"{query}: {sql}\n{plan}")
    assert failures == []


def test_each_sort_order_is_read_in_index_order(admin_client_, seeded):
    for key in JOB_SORT_KEYS:
        queries = _job_queries(admin_client_, f"sort={key.value}")
        page_query = next(q for q in queries if "ORDER BY" in q)
        # With sorting priced out, a plan still sorting would mean no index has the order.
        plan = plans.explain(page_query, "enable_sort")
        if connection.vendor == "postgresql" and key.field == "priority":
            # The sort key's index holds every job but the running ones (migration
            # 0017): the page reads them in its order, and the running jobs (a
            # fleet's concurrency) through the lease index, sorted.
            assert plans.indexes_used(plan) == [key.index, "dj_job_lease"], plan
            assert plans.sorted_scans(plan) in ([], ["dj_job_lease"]), plan
            continue
        assert not plans.sorts(plan), plan
        assert plans.index_used(plan) == key.index, plan


def test_each_equality_filter_seeks_in_its_index(admin_client_, seeded):
    for name, (value, index) in EQUALITY_FILTERS.items():
        queries = _job_queries(admin_client_, f"{name}={value}")
        page_query = next(q for q in queries if "ORDER BY" in q)
        plan = plans.explain(page_query)
        if connection.vendor == "postgresql" and name != "state":
            # The filter indexes hold finished jobs only (migration 0015): the
            # page reads the finished part through the filter's index and the
            # live part (the backlog, the running jobs) through its own.
            assert index in plans.indexes_used(plan), f"{name}: {plan}"
            assert "Merge Append" in plan or "Append" in plan, f"{name}: {plan}"
        else:
            assert plans.index_used(plan) == index, f"{name}: {plan}"
        assert plans.seeks(plan), f"{name}: {plan}"


def test_argument_search_uses_the_gin_index(admin_client_, seeded, postgresql_only):
    queries = _job_queries(admin_client_, "q=%7B%22user%22%3A+1%7D")
    page_query = next(q for q in queries if "ORDER BY" in q)
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_indexscan = off")  # leave bitmap (GIN) scans only
        cursor.execute("EXPLAIN " + page_query)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "dj_job_payload_gin" in plan, plan


def test_a_part_of_a_task_name_reads_newest_first_and_stops_at_a_page(
    admin_client_, seeded, postgresql_only
):
    """No index serves ``LIKE '%part%'`` (docs/admin.md, "Task names"): the page
    walks the primary key newest-first and stops once it has a page."""
    for query in ("q=tasks.a", "task=tasks.a"):
        queries = _job_queries(admin_client_, query)
        page_query = next(q for q in queries if "ORDER BY" in q)
        assert "LIKE" in page_query.upper() and "LIMIT" in page_query.upper(), page_query
        # The fixture's few matches make every full read of a part look alike to
        # the planner (a partial index read whole, as a bitmap or not, then
        # sorted; a primary key made costly by the rows earlier tests rolled
        # back): sorting priced out too, what is left is the walk in id order.
        plan = plans.explain(page_query, "enable_bitmapscan", "enable_sort")
        assert plan.lstrip().startswith("Limit"), plan
        assert "Index Scan Backward using dispatch_jobs_job_pkey" in plan, plan
