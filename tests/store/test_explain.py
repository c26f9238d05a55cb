"""The claim's plans on every database, beside many finished rows and a few
ready ones: the ready claim seeks ``dj_job_ready`` and the suspect probe
``dj_job_suspect`` (both partial on PostgreSQL and SQLite; on MariaDB led by
the columns of their condition, migrations 0007 and 0009), and the store's
name-prefix listing seeks ``dj_job_name_id`` on PostgreSQL (migration 0009)."""

from __future__ import annotations

import pytest
from django.db import connection

from dispatch_jobs import store
from dispatch_jobs.models import FINISHED_STATES, Job, JobState, Quarantine
from tests import plans
from tests.factories import JobFactory
from tests.store.support import capture, claim

pytestmark = pytest.mark.django_db

# PostgreSQL's planner sees the table as it is (ANALYZE); the others need only
# enough rows for a full read to cost more than a seek.
FINISHED_ROWS = 100_000 if connection.vendor == "postgresql" else 16_384


def fill_finished(count: int) -> None:
    """About ``count`` completed rows, copied from one template row: on
    PostgreSQL in one INSERT, elsewhere by doubling (an INSERT ... SELECT of
    the rows so far, until there are enough)."""
    template = JobFactory.create(state=JobState.COMPLETED)
    columns = ", ".join(
        connection.ops.quote_name(field.column)
        for field in Job._meta.concrete_fields
        if field.column and field.column != "id"
    )
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                f"INSERT INTO {plans.TABLE} ({columns}) SELECT {columns} FROM {plans.TABLE}, "
                "generate_series(1, %s) WHERE id = %s",
                [count - 1, template.pk],
            )
            # Earlier tests' rolled-back inserts leave dead entries in the indexes
            # (no autovacuum runs mid-suite); rebuild them so the planner sees the
            # table a live deployment has. REINDEX is transactional: the test's
            # rollback undoes it.
            cursor.execute(f"REINDEX TABLE {plans.TABLE}")
            return
        have = 1
        while have < count:
            cursor.execute(
                f"INSERT INTO {plans.TABLE} ({columns}) SELECT {columns} FROM {plans.TABLE} "
                "WHERE state = %s",
                [JobState.COMPLETED],
            )
            have *= 2


def analyze() -> None:
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"ANALYZE {plans.TABLE}")


def claim_select(captured: list[dict]) -> str:
    """The statement that chooses the rows: PostgreSQL's locking sub-select
    (``UPDATE ... WHERE id = ANY(ARRAY(SELECT ... FOR UPDATE))``), SQLite's
    ``UPDATE ... WHERE id IN (SELECT ...)``, MariaDB's candidate read (the
    first ordered SELECT; the lock then goes by primary key)."""
    sqls = plans.job_table_queries(captured)
    if connection.vendor == "postgresql":
        (select,) = [sql for sql in sqls if "FOR UPDATE" in sql]
        return select
    if connection.vendor == "sqlite":
        (update,) = [sql for sql in sqls if sql.startswith("UPDATE")]
        return update
    return next(sql for sql in sqls if sql.startswith("SELECT") and "ORDER BY" in sql)


def test_claim_select_uses_the_ready_index() -> None:
    fill_finished(FINISHED_ROWS)
    JobFactory.create_batch_enqueued(20)
    analyze()
    with capture() as ctx:
        assert len(claim(limit=5)) == 5
    plan = plans.explain(claim_select(ctx.captured_queries), as_planned=True)
    assert "dj_job_ready" in plan, plan
    assert not plans.scans_the_table(plan), plan
    assert Job.objects.filter(state=JobState.COMPLETED).count() >= FINISHED_ROWS


def test_suspect_probe_uses_the_suspect_index() -> None:
    fill_finished(FINISHED_ROWS)
    # A backlog, so that walking the ready index for the one suspect costs more
    # than seeking it.
    JobFactory.create_batch_enqueued(2_000)
    suspect = JobFactory.create_batch_enqueued(1)[0]
    Job.objects.filter(pk=suspect.pk).update(quarantine=Quarantine.SUSPECT)
    analyze()
    with capture() as ctx:
        assert [job.pk for job in claim(limit=1, suspects="only")] == [suspect.pk]
    plan = plans.explain(claim_select(ctx.captured_queries), as_planned=True)
    assert "dj_job_suspect" in plan, plan
    assert not plans.scans_the_table(plan), plan


def test_name_prefix_listing_seeks_the_name_index() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("the pattern operator class is PostgreSQL's (LIKE 'x%' under any collation)")
    fill_finished(FINISHED_ROWS)
    live = JobFactory.create_batch_enqueued(3, name="app.reports.build")
    done = [JobFactory.create(state=state, name="app.reports.send") for state in FINISHED_STATES]
    analyze()
    with capture() as ctx:
        page = store.list_jobs(store.ListOptions(name_prefix="app.reports.", limit=10))
    assert [job.pk for job in page.jobs] == sorted((j.pk for j in live + done), reverse=True)
    (sql,) = [q for q in plans.job_table_queries(ctx.captured_queries) if "LIKE" in q]
    plan = plans.explain(sql, as_planned=True)
    # The name index holds finished jobs only (migration 0015): the list's
    # finished part seeks it, its live part reads the live rows apart.
    assert "dj_job_name_id" in plans.indexes_used(plan), plan
    assert plans.seeks(plan), plan
    assert not plans.scans_the_table(plan), plan
