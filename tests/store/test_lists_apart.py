"""A list of jobs read in a live and a finished part (``store.reads.first_rows``,
``count_at_most``, ``count_rows``) is the same list as one ordered read, on
every database, whatever the order, the filter and the mix of states.

On PostgreSQL the filter indexes hold finished jobs only (migration 0015) and
the state index and the sort keys' every job but the running ones (0017), so
the store reads the parts apart, in one ``UNION ALL`` statement; elsewhere it
reads the query whole.
"""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from django.db import connection
from django.db.models import F, Q
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from dispatch_jobs.models import FINISHED_STATES, Job, JobState
from dispatch_jobs.store import reads
from dispatch_jobs.store.engines import engine_for
from tests.factories import JobFactory

pytestmark = pytest.mark.django_db

ORDERINGS = {
    "newest": [F("id").desc()],
    "oldest": [F("id").asc()],
    "priority": [F("priority").desc(), F("id").desc()],
    "lowest priority": [F("priority").asc(), F("id").asc()],
    "enqueued": [F("created_at").desc(), F("id").desc()],
    "finished": [F("completed_at").desc(), F("id").desc()],
}
STATES = [*reads.LIVE_STATES, *FINISHED_STATES]


def test_every_state_is_live_or_finished() -> None:
    assert sorted(STATES) == sorted(JobState) and len(set(STATES)) == len(STATES)


@pytest.fixture
def mixed() -> list[Job]:
    """60 jobs with their states, queues, priorities and times interleaved by id."""
    rng = random.Random(7)
    now = timezone.now()
    jobs = []
    for _ in range(60):
        state = STATES[rng.randrange(len(STATES))]
        extra = {"completed_at": now - timedelta(minutes=rng.randrange(5))}
        jobs.append(
            JobFactory.create(
                state=state,
                queue=rng.choice(["mail", "default"]),
                priority=rng.randrange(-2, 3),  # ties: the id decides
                created_at=now - timedelta(minutes=rng.randrange(5)),
                **(extra if state in FINISHED_STATES else {}),
            )
        )
    return jobs


FILTERS = {
    "all": {},
    "queue": {"queue": "mail"},
    "name prefix": {"name__startswith": "tests.jobs."},
    "queue or no worker": {},  # a Q, below
    "live state": {"state": JobState.RETRYING},
    "finished state": {"state": JobState.FAILED},
    "finished time": {"completed_at__isnull": False},
}


@pytest.mark.parametrize("order", ORDERINGS)
@pytest.mark.parametrize("filter_", FILTERS)
def test_a_list_read_apart_is_the_list_read_whole(mixed, order, filter_) -> None:
    queryset = reads.jobs().filter(**FILTERS[filter_])
    if filter_ == "queue or no worker":
        queryset = queryset.filter(Q(queue="mail") | Q(worker_id=""))
    if order == "finished":
        queryset = queryset.filter(completed_at__isnull=False)
    ordering = ORDERINGS[order]
    whole = list(queryset.order_by(*ordering).values_list("id", flat=True))
    # The fixture has rows under every filter (a retrying job has no finish time).
    assert whole or (filter_, order) == ("live state", "finished")
    for limit in (1, 7, len(whole), len(whole) + 5):
        rows = reads.first_rows(queryset, ordering, limit)
        assert [job.id for job in rows] == whole[:limit], (order, filter_, limit)
        assert all(isinstance(job, Job) for job in rows)
        assert reads.count_at_most(queryset, limit) == min(len(whole), limit)
    assert reads.count_rows(queryset) == len(whole)


def test_rows_read_apart_are_whole_jobs_with_their_annotations_and_deferrals(mixed) -> None:
    queryset = reads.jobs().defer("payload").annotate(twice=F("priority") * 2)
    (job,) = reads.first_rows(queryset, [F("id").desc()], 1)
    latest = max(mixed, key=lambda j: j.id)
    assert (job.id, job.state, job.twice) == (latest.id, latest.state, latest.priority * 2)
    assert "payload" in job.get_deferred_fields()
    assert job.payload == latest.payload  # loaded on access, like any deferred field


def test_an_empty_query_reads_nothing(mixed) -> None:
    with CaptureQueriesContext(connection) as captured:
        assert reads.first_rows(reads.jobs().none(), [F("id").desc()], 10) == []
        assert reads.count_at_most(reads.jobs().none(), 10) == 0
        assert reads.count_rows(reads.jobs().none()) == 0
    assert captured.captured_queries == []


def test_each_read_is_one_statement_apart_only_where_the_indexes_are(mixed) -> None:
    apart = engine_for(connection.alias).finished_apart
    queryset = reads.jobs().filter(queue="mail")
    with CaptureQueriesContext(connection) as captured:
        reads.first_rows(queryset, [F("id").desc()], 5)
        reads.count_at_most(queryset, 5)
        reads.count_rows(queryset)
    statements = [q["sql"] for q in captured.captured_queries]
    assert len(statements) == 3, statements
    assert all(("UNION ALL" in sql) == apart for sql in statements), statements


NEWEST = [F("id").desc()]
BY_PRIORITY = [F("priority").desc(), F("id").desc()]


@pytest.mark.parametrize(
    ("filters", "ordering", "parts"),
    [
        # The primary key holds every row: one part.
        ({}, NEWEST, 1),
        ({"completed_at__isnull": False}, NEWEST, 1),
        # A state filter implies the state index's condition or the lease index's.
        ({"state": JobState.FAILED}, NEWEST, 1),
        ({"state": JobState.RUNNING}, NEWEST, 1),
        ({"state__in": list(reads.READY_STATES)}, BY_PRIORITY, 1),
        ({"state__in": [JobState.FAILED, JobState.PENDING]}, NEWEST, 1),
        # The state index and the sort keys' hold all but the running jobs
        # (migration 0017): running and not running apart.
        ({"state__in": [JobState.PENDING, JobState.RUNNING]}, NEWEST, 2),
        ({}, BY_PRIORITY, 2),
        ({"priority__gt": 0, "completed_at__isnull": False}, NEWEST, 2),
        ({"created_at__isnull": False}, NEWEST, 2),
        # The filter indexes hold finished jobs only (0015): waiting, running and
        # finished apart.
        ({"queue": "mail"}, NEWEST, 3),
        ({"queue": "mail"}, BY_PRIORITY, 3),
        ({"name__startswith": "tests."}, NEWEST, 3),
        ({"scope_app_id": "a"}, NEWEST, 3),
        ({"scope_org_id": "o"}, NEWEST, 3),
        ({"worker_id": "w"}, NEWEST, 3),
        ({"payload__contains": {"args": []}}, NEWEST, 3),
    ],
)
def test_a_list_is_read_apart_only_where_a_partial_index_needs_it(
    mixed, filters, ordering, parts
) -> None:
    """Where the indexes are partial (PostgreSQL) a list is read in as many parts
    as the indexes its filter and its order need; elsewhere in one."""
    if "payload__contains" in filters and connection.vendor != "postgresql":
        pytest.skip("JSON containment is PostgreSQL's (the admin's argument search)")
    queryset = reads.jobs().filter(**filters)
    with CaptureQueriesContext(connection) as captured:
        rows = reads.first_rows(queryset, ordering, 5)
    assert [j.id for j in rows] == list(
        queryset.order_by(*ordering).values_list("id", flat=True)[:5]
    )
    (sql,) = [q["sql"] for q in captured.captured_queries]
    expected = parts if engine_for(connection.alias).finished_apart else 1
    assert sql.count("UNION ALL") == expected - 1, sql


def test_other_tables_are_read_whole(mixed) -> None:
    from dispatch_jobs.models import Usage
    from tests.factories import UsageFactory

    UsageFactory.create_batch(3)
    with CaptureQueriesContext(connection) as captured:
        rows = reads.first_rows(reads.usage(), [F("id").desc()], 2)
    assert [u.id for u in rows] == list(
        Usage.objects.order_by("-id").values_list("id", flat=True)[:2]
    )
    assert "UNION" not in captured.captured_queries[0]["sql"]
