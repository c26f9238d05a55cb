"""Each index of the job table exists once, on the database under test.

Read from the database's own catalog (not Django's introspection, which drops
conditions and operator classes), so the test sees what migrations really built.
Every write pays for every index; two that serve the same lookups are one too many.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from itertools import combinations
from typing import NamedTuple

import pytest
from django.db import connection, models
from django.db.models import Q

from dispatch_jobs.models import FINISHED_STATES, Job
from dispatch_jobs.models.jobs import FINISHED, NOT_RUNNING
from dispatch_jobs.store.engines import engine_for
from dispatch_jobs.store.reads import LIVE_STATES

pytestmark = pytest.mark.django_db

TABLE = Job._meta.db_table


class Key(NamedTuple):
    column: str
    descending: bool
    opclass: str  # "" for the default


class Index(NamedTuple):
    name: str
    method: str
    keys: tuple[Key, ...]
    condition: str  # "" for none
    unique: bool


def _postgresql() -> list[Index]:
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT c.relname, am.amname, i.indisunique,
                   coalesce(pg_get_expr(i.indpred, i.indrelid), ''),
                   array_agg(a.attname ORDER BY k.n),
                   array_agg((k.option & 1) = 1 ORDER BY k.n),
                   array_agg(CASE WHEN oc.opcdefault THEN '' ELSE oc.opcname END ORDER BY k.n)
            FROM pg_index i
            JOIN pg_class c ON c.oid = i.indexrelid
            JOIN pg_am am ON am.oid = c.relam
            CROSS JOIN LATERAL unnest(i.indkey::int2[], i.indoption::int2[], i.indclass::oid[])
                WITH ORDINALITY AS k(attnum, option, opclass, n)
            JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
            JOIN pg_opclass oc ON oc.oid = k.opclass
            WHERE i.indrelid = %s::regclass
            GROUP BY c.relname, am.amname, i.indisunique, i.indpred, i.indrelid
            """,
            [TABLE],
        )
        return [
            Index(name, method, tuple(map(Key, cols, desc, ops)), cond, unique)
            for name, method, unique, cond, cols, desc, ops in cursor.fetchall()
        ]


def _mysql() -> list[Index]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT index_name, index_type, non_unique = 0, column_name, collation = 'D' "
            "FROM information_schema.statistics "
            "WHERE table_schema = DATABASE() AND table_name = %s "
            "ORDER BY index_name, seq_in_index",
            [TABLE],
        )
        rows = cursor.fetchall()
    found: dict[str, Index] = {}
    for name, method, unique, column, descending in rows:
        index = found.get(name) or Index(name, method, (), "", bool(unique))
        found[name] = index._replace(keys=(*index.keys, Key(column, bool(descending), "")))
    return list(found.values())


def _sqlite() -> list[Index]:
    with connection.cursor() as cursor:
        cursor.execute(f"PRAGMA index_list({TABLE})")
        listed = [(row[1], bool(row[2])) for row in cursor.fetchall()]
        found = []
        for name, unique in listed:
            cursor.execute(f"PRAGMA index_xinfo({name})")
            keys = tuple(Key(row[2], bool(row[3]), "") for row in cursor.fetchall() if row[5])
            cursor.execute("SELECT sql FROM sqlite_master WHERE name = %s", [name])
            sql = cursor.fetchone()[0] or ""  # NULL for the automatic ones
            where = re.search(r"\bWHERE\b(.*)$", sql, re.IGNORECASE | re.DOTALL)
            found.append(
                Index(name, "btree", keys, where.group(1).strip() if where else "", unique)
            )
        return found


def job_indexes() -> list[Index]:
    return {"postgresql": _postgresql, "mysql": _mysql, "sqlite": _sqlite}[connection.vendor]()


def _state_partitioned(index: Index) -> Index:
    """An index that leads with the job's state partitions the rest of its key
    by life-cycle phase, which is what a partial index's condition on the state
    does: compare it as the index on the remaining columns."""
    if len(index.keys) > 1 and index.keys[0].column == "state":
        return index._replace(keys=index.keys[1:], condition="<state>")
    return index


def redundant_pairs(indexes: Iterable[Index]) -> list[tuple[str, str, str]]:
    """(name, name, why) for every two indexes that serve the same lookups: the
    same leading column list (a left prefix of the other, or equal; with the
    same method, directions and operator classes, under the same condition), or
    the same columns once a leading state is read as the partial condition it
    stands for."""
    found = []
    for a, b in combinations(sorted(indexes), 2):
        if a.method != b.method:
            continue
        short, long_ = sorted((a, b), key=lambda i: len(i.keys))
        prefix = long_.keys[: len(short.keys)] == short.keys and not short.unique
        if prefix and short.condition == long_.condition:
            found.append((short.name, long_.name, "same leading column list"))
            continue
        left, right = _state_partitioned(a), _state_partitioned(b)
        if (a.keys, b.keys) != (left.keys, right.keys) and left.keys == right.keys:
            found.append((a.name, b.name, "same columns, one partitioned by state"))
    return found


def test_no_two_job_indexes_serve_the_same_lookups() -> None:
    indexes = job_indexes()
    assert len(indexes) >= len(Job._meta.indexes)  # the catalog query saw them
    assert redundant_pairs(indexes) == [], sorted(indexes)


def test_every_index_the_model_declares_exists_once_by_its_name() -> None:
    names = [index.name for index in job_indexes()]
    for declared in Job._meta.indexes:
        assert names.count(declared.name) == 1, (declared.name, names)


def condition_columns(condition: Q) -> set[str]:
    """The columns a model index's condition tests (``state__in`` → ``state``)."""
    columns: set[str] = set()
    for child in condition.children:
        if isinstance(child, Q):
            columns |= condition_columns(child)
        else:
            columns.add(Job._meta.get_field(child[0].split("__")[0]).column)
    return columns


@pytest.mark.parametrize(
    "declared", [i for i in Job._meta.indexes if i.condition is not None], ids=lambda i: i.name
)
def test_a_conditional_index_is_partial_or_led_by_its_condition(declared: models.Index) -> None:
    """Partial on PostgreSQL and SQLite (only the rows it serves enter it); on
    MariaDB, which has no partial indexes, led by a column the condition tests:
    never a plain index on the fields alone. Either all the condition's columns
    lead it, or only the most selective ones (``dj_job_suspect`` is
    ``(quarantine)``: claims and completions, which change the state but not the
    quarantine, then write no entry of it; migration 0010)."""
    (built,) = [index for index in job_indexes() if index.name == declared.name]
    assert declared.condition is not None
    if declared.condition == FINISHED:
        return  # test_the_filter_indexes_hold_finished_jobs_where_lists_read_them_apart
    if declared.condition == NOT_RUNNING:
        return  # test_the_state_and_sort_indexes_hold_every_job_but_the_running_ones
    tested = condition_columns(declared.condition)
    if built.condition:
        fields = [Job._meta.get_field(f.lstrip("-")).column for f in declared.fields]
        assert [key.column for key in built.keys] == fields
        assert all(column in built.condition for column in tested), built.condition
    else:
        keys = [key.column for key in built.keys]
        assert keys[0] in tested, built.keys
        leading = set(keys[: len(tested)])
        assert leading == tested or set(keys) <= tested, built.keys


FINISHED_ONLY = ["dj_job_queue_id", "dj_job_name_id", "dj_job_scope_id", "dj_job_org_id"]
FINISHED_ONLY += ["dj_job_worker_id"]


def test_the_filter_indexes_hold_finished_jobs_where_lists_read_them_apart() -> None:
    """Migration 0015: on PostgreSQL the filter indexes (and the argument
    search's GIN index) are partial on the finished states, so no enqueue, claim
    or retry writes them, and the store reads every list of jobs in a live and
    a finished part (the engine's ``finished_apart``). SQLite and MariaDB build
    them whole and read lists whole. Were one of them partial where lists are
    read whole (a table rebuilt from the model's state on SQLite, say), no
    filtered list could use it."""
    declared = sorted(i.name for i in Job._meta.indexes if i.condition == FINISHED)
    assert declared == sorted(FINISHED_ONLY)
    apart = engine_for(connection.alias).finished_apart
    assert apart == (connection.vendor == "postgresql")
    built = {index.name: index for index in job_indexes()}
    names = FINISHED_ONLY + (["dj_job_payload_gin"] if apart else [])
    for name in names:
        condition = built[name].condition
        if apart:
            assert all(s in condition for s in FINISHED_STATES), (name, condition)
            assert not any(s in condition for s in LIVE_STATES), (name, condition)
        else:
            assert condition == "", (name, condition)


NOT_RUNNING_ONLY = ["dj_job_created_id", "dj_job_priority_id", "dj_job_state_id"]


def test_the_state_and_sort_indexes_hold_every_job_but_the_running_ones() -> None:
    """Migration 0017: on PostgreSQL the state index and the sort keys' indexes
    leave the running jobs out, so a claim writes none of them (the running
    jobs are read through dj_job_lease); SQLite and MariaDB build them whole."""
    declared = sorted(i.name for i in Job._meta.indexes if i.condition == NOT_RUNNING)
    assert declared == NOT_RUNNING_ONLY
    built = {index.name: index for index in job_indexes()}
    for name in NOT_RUNNING_ONLY:
        condition = built[name].condition
        if connection.vendor == "postgresql":
            assert condition == "(NOT ((state)::text = 'running'::text))", (name, condition)
        else:
            assert condition == "", (name, condition)


@pytest.mark.django_db(transaction=True)
def test_migration_0017_goes_back_to_whole_indexes_and_forward_again() -> None:
    """0017 is reversible: back to 0016 the three indexes are whole again (on
    PostgreSQL, rebuilt CONCURRENTLY; elsewhere nothing was built differently),
    and forward they hold every job but the running ones."""
    from django.db.migrations.executor import MigrationExecutor

    def conditions() -> dict[str, str]:
        built = {index.name: index for index in job_indexes()}
        return {name: built[name].condition for name in NOT_RUNNING_ONLY}

    latest = MigrationExecutor(connection).loader.graph.leaf_nodes("dispatch_jobs")
    before = [("dispatch_jobs", "0016_replay_link_partial")]
    try:
        MigrationExecutor(connection).migrate(before)
        assert set(conditions().values()) == {""}
    finally:
        MigrationExecutor(connection).migrate(latest)
    expected = (
        "(NOT ((state)::text = 'running'::text))" if connection.vendor == "postgresql" else ""
    )
    assert set(conditions().values()) == {expected}


def _index(name: str, *columns: str, opclass: str = "", condition: str = "") -> Index:
    return Index(name, "btree", tuple(Key(c, False, opclass) for c in columns), condition, False)


@pytest.mark.parametrize(
    ("a", "b", "redundant"),
    [
        (_index("a", "queue", "priority"), _index("b", "queue", "priority"), True),
        (_index("a", "queue"), _index("b", "queue", "priority"), True),
        (_index("a", "queue", "priority"), _index("b", "state", "queue", "priority"), True),
        (_index("a", "name"), _index("b", "name", "id", opclass="text_pattern_ops"), False),
        (_index("a", "name"), _index("b", "name", "id", condition="x"), False),
        (_index("a", "queue", "id"), _index("b", "queue", "priority"), False),
        (_index("a", "state", "id"), _index("b", "state", "queue"), False),
    ],
)
def test_the_rule_itself(a: Index, b: Index, redundant: bool) -> None:
    """The check flags what it should, on hand-made catalogs."""
    assert bool(redundant_pairs([a, b])) is redundant


def test_the_replay_link_is_unique_and_indexed_only_where_it_is_set() -> None:
    """Migration 0016: on PostgreSQL the replay link's unique index is partial on
    ``replay_of_id IS NOT NULL``, so the NULL of every other row version writes
    no entry; elsewhere it stays whole (neither SQLite nor InnoDB writes it
    unless the column changes). Either way exactly one unique index guards the
    link, and it has that one column."""
    guards = [
        i for i in job_indexes() if i.unique and [k.column for k in i.keys] == ["replay_of_id"]
    ]
    assert len(guards) == 1, guards
    if connection.vendor == "postgresql":
        assert guards[0].condition == "(replay_of_id IS NOT NULL)"
    else:
        assert guards[0].condition == ""


@pytest.mark.django_db
def test_the_replay_link_refuses_a_second_replay_and_admits_many_unlinked_rows() -> None:
    from django.db import IntegrityError, transaction

    from dispatch_jobs import store
    from tests.factories import JobFactory

    original = JobFactory(state="failed")
    for _ in range(3):
        store.enqueue_job(Job(name="x.y", queue="default", payload={"args": [], "kwargs": {}}))
    store.enqueue_job(Job(name="x.y", queue="default", payload={}, replay_of_id=original.pk))
    with pytest.raises(IntegrityError), transaction.atomic():
        store.enqueue_job(Job(name="x.y", queue="default", payload={}, replay_of_id=original.pk))
    assert Job.objects.filter(replay_of_id=original.pk).count() == 1
    assert Job.objects.filter(replay_of__isnull=True).count() == 4


@pytest.mark.django_db
@pytest.mark.skipif(connection.vendor != "postgresql", reason="the partial index is PostgreSQL's")
def test_the_dead_letter_finds_replays_through_the_partial_index() -> None:
    """The dead letter lists failed jobs nobody replayed (``replayed_by IS NULL``,
    a join on ``replay_of_id``): the join reads the partial index, whose condition
    every joined row meets."""
    from dispatch_jobs import store
    from tests import plans
    from tests.factories import JobFactory

    failed = [JobFactory(state="failed") for _ in range(3)]
    store.replay_jobs([failed[0].pk])
    query = Job.objects.filter(state="failed", replayed_by__isnull=True).order_by("-id")[:50]
    assert [job.pk for job in query] == [failed[2].pk, failed[1].pk]
    sql, params = query.query.sql_with_params()
    with connection.cursor() as cursor:
        composed = cursor.mogrify(sql, params)
    plan = plans.explain(composed)
    assert "dj_job_replay_of" in plan, plan
