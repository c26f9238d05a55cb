"""The claim's plan uses the partial ready index on PostgreSQL, with 100k finished
rows beside a few ready ones."""

from __future__ import annotations

import pytest
from django.db import connection

from dispatch_jobs.models import Job, JobState
from tests.factories import JobFactory
from tests.store.support import capture, claim

pytestmark = pytest.mark.django_db

FINISHED_ROWS = 100_000


@pytest.fixture
def postgresql_only() -> None:
    if connection.vendor != "postgresql":
        pytest.skip(
            f"the plan check reads PostgreSQL's EXPLAIN and its partial index; on "
            f"{connection.vendor} the claim's behaviour is covered by the other store tests"
        )


def fill_finished(count: int) -> None:
    """``count`` completed rows, copied from one template row in a single INSERT."""
    template = JobFactory.create(state=JobState.COMPLETED)
    table = Job._meta.db_table
    columns = ", ".join(
        connection.ops.quote_name(field.column)
        for field in Job._meta.concrete_fields
        if field.column and field.column != "id"
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} ({columns}) SELECT {columns} FROM {table}, "
            "generate_series(1, %s) WHERE id = %s",
            [count - 1, template.pk],
        )
        cursor.execute(f"ANALYZE {table}")


def test_claim_select_uses_the_ready_index(postgresql_only: None) -> None:
    with connection.cursor() as cursor:
        # Earlier tests' rolled-back inserts leave dead entries in the indexes (no
        # autovacuum runs mid-suite); rebuild them so the planner sees the table a
        # live deployment has. REINDEX is transactional: the test's rollback undoes it.
        cursor.execute(f"REINDEX TABLE {Job._meta.db_table}")
    fill_finished(FINISHED_ROWS)
    JobFactory.create_batch_enqueued(20)
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {Job._meta.db_table}")
    with capture() as ctx:
        assert len(claim(limit=5)) == 5
    # The locking SELECT: a statement of its own, or the sub-select of the
    # single-statement claim (UPDATE ... WHERE id = ANY(ARRAY(SELECT ... FOR UPDATE))).
    (select,) = [q["sql"] for q in ctx.captured_queries if "FOR UPDATE" in q["sql"]]
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN {select}")
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "dj_job_ready" in plan, plan
    assert Job.objects.filter(state=JobState.COMPLETED).count() == FINISHED_ROWS
