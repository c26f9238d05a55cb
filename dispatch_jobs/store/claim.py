"""Claiming ready jobs: the seed's ``DequeueJobs``.

One transaction selects the ready rows that fit, locks them (``FOR UPDATE SKIP
LOCKED`` on PostgreSQL and MariaDB; on SQLite the IMMEDIATE transaction holds the
database's write lock from BEGIN), marks them running and, when asked, grants the
lease in the very same transaction. The fit test is part of the SELECT, so a job
that does not fit is never written and never consumes a slot of the limit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import connections, transaction
from django.db.models import BooleanField, Case, F, IntegerField, Q, QuerySet, Value, When
from django.db.models.expressions import RawSQL
from django.db.models.functions import Now, Replace
from django.db.models.sql import UpdateQuery

from ..exceptions import LeaseWithoutWorker
from ..models import READY_STATES, Job, JobState, Quarantine, QueueControl
from ..resources import CUSTOM_KEY_SEPARATOR as SEP
from ..resources import STANDARD_KEYS
from . import db
from .options import ClaimOptions


def claim_jobs(opts: ClaimOptions) -> list[Job]:
    """Atomically claim up to ``opts.limit`` ready jobs that fit ``opts``.

    Returns them ordered by priority descending, then locality-preferred first,
    then run_at ascending, then id.
    """
    # Both checks come before validation and before any query, as in the seed.
    if opts.limit <= 0 or not (opts.queues or opts.every_queue):
        return []
    if opts.grants() and not opts.worker_id:
        raise LeaseWithoutWorker()

    returning = db.vendor() in _RETURNING_VENDORS
    jobs = _claim_returning(opts) if returning else _claim_in_steps(opts)
    preferred = set(opts.preferred_hashes())
    jobs.sort(key=lambda j: (-j.priority, j.primary_input_hash not in preferred, j.run_at, j.id))
    return jobs


def suspects_waiting(queues: Sequence[str], every_queue: bool = False) -> bool:
    """Whether a suspect (``Quarantine.SUSPECT``: a job to run alone) is ready in
    ``queues`` (in any queue with ``every_queue``). Served by the small
    ``dj_job_suspect`` index: cheap at any size."""
    if not queues and not every_queue:
        return False
    opts = ClaimOptions(queues=list(queues), every_queue=every_queue, limit=1, suspects="only")
    return _eligible(opts).exists()


# Databases with UPDATE ... RETURNING: the claim is one statement. MariaDB has
# none (its RETURNING covers INSERT and DELETE only) and claims in steps.
_RETURNING_VENDORS = frozenset({"postgresql", "sqlite"})


def _claim_returning(opts: ClaimOptions) -> list[Job]:
    """Select, lock, mark running, lease and read back in ONE statement.

    PostgreSQL: ``UPDATE job SET ... WHERE id = ANY(ARRAY(SELECT id ... LIMIT n
    FOR UPDATE SKIP LOCKED)) RETURNING *``. ``ARRAY(subquery)`` is an init plan,
    evaluated exactly once: a plain ``IN (subquery)`` may be re-scanned by the
    plan and, with SKIP LOCKED, answer differently each time (claiming more than
    the limit). The sub-select's row locks are what concurrent claimers skip, as
    in the stepwise claim, and one statement is atomic on its own (autocommit) or
    inside the caller's transaction. SQLite: ``UPDATE ... WHERE id IN (SELECT ...
    LIMIT n) RETURNING *`` inside an IMMEDIATE transaction, which takes the
    database's write lock at BEGIN: no other writer can claim between the read
    and the write.
    """
    alias = db.alias()
    sql, params = _statement(alias, opts)
    if connections[alias].vendor == "postgresql":
        return _run(alias, sql, params)
    with transaction.atomic(using=alias):
        return _run(alias, sql, params)


# Compiled claim statements by (alias, options): a worker repeats the same few
# claims thousands of times, and compiling the ORM query costs more than the
# database needs to run it. Bounded: cleared when full (budgets can vary).
_STATEMENTS: dict[tuple[Any, ...], tuple[str, tuple[Any, ...]]] = {}
_STATEMENTS_MAX = 256


def _statement(alias: str, opts: ClaimOptions) -> tuple[str, tuple[Any, ...]]:
    budget = None if opts.budget is None else tuple(sorted(opts.budget.items()))
    key = (
        alias,
        tuple(opts.queues),
        opts.every_queue,
        opts.limit,
        budget,
        tuple(opts.custom_keys),
        tuple(opts.prefer_hashes),
        opts.reserved_for,
        opts.worker_id,
        opts.lease_ttl,
        opts.suspects,
        opts.alone,
    )
    found = _STATEMENTS.get(key)
    if found is None:
        if len(_STATEMENTS) >= _STATEMENTS_MAX:
            _STATEMENTS.clear()
        found = _STATEMENTS[key] = _compile(opts)
    return found


def _compile(opts: ClaimOptions) -> tuple[str, tuple[Any, ...]]:
    connection = connections[db.alias()]
    candidates = _eligible(opts).values_list("id", flat=True)[: opts.limit]
    select_sql, select_params = candidates.query.get_compiler(db.alias()).as_sql()
    if connection.vendor == "postgresql":
        # Appended rather than select_for_update(): the ORM refuses to compile a
        # locking SELECT in autocommit, though this one runs inside a single
        # (hence atomic) statement. PostgreSQL takes it after LIMIT, as here.
        select_sql = f"{select_sql} {connection.ops.for_update_sql(skip_locked=True)}"
        quote = connection.ops.quote_name
        chosen = Q(
            RawSQL(
                f"{quote(Job._meta.db_table)}.{quote('id')} = ANY(ARRAY({select_sql}))",
                select_params,
                output_field=BooleanField(),
            )
        )
    else:
        chosen = Q(id__in=RawSQL(select_sql, select_params))
    sql, params = _update_sql(opts, chosen)
    columns = ", ".join(connection.ops.quote_name(str(f.column)) for f in Job._meta.concrete_fields)
    return f"{sql} RETURNING {columns}", params


def _run(alias: str, sql: str, params: tuple[Any, ...]) -> list[Job]:
    """Execute the claim and build its rows into jobs (Django's converters, the
    model's positional constructor: the cheapest way the ORM offers)."""
    connection = connections[alias]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    if not rows:
        return []
    fields = Job._meta.concrete_fields
    compiler = Job.objects.using(alias).none().query.get_compiler(alias)
    converters = compiler.get_converters([f.get_col(Job._meta.db_table) for f in fields])
    if converters:
        rows = list(compiler.apply_converters(rows, converters))
    names = [f.attname for f in fields]
    return [Job.from_db(alias, names, row) for row in rows]


def _update_sql(opts: ClaimOptions, chosen: Q) -> tuple[str, tuple[Any, ...]]:
    """``UPDATE job SET <claim changes> WHERE <chosen>``, compiled by the ORM so
    the changes (database-clock arithmetic included) are written once."""
    query = UpdateQuery(Job)
    query.add_update_values(_claim_changes(opts))
    query.add_q(chosen)
    sql, params = query.get_compiler(db.alias()).as_sql()
    return sql, tuple(params)


def _claim_in_steps(opts: ClaimOptions) -> list[Job]:
    """MariaDB: choose candidates in claim order without locking, lock exactly
    the rows to take (``_lock_ready``), mark them running, read them back, all
    in one transaction.

    InnoDB's locking read locks every row it reads, and a claim's ORDER BY is not
    an index order (two ready states, several queues, preferred hashes): a
    ``SELECT ... ORDER BY ... LIMIT n FOR UPDATE SKIP LOCKED`` reads, and locks,
    every ready row of the queues before sorting, so a second claimer skips them
    all and gets nothing. Instead a plain read (no lock) lists candidates in
    claim order, a few more than needed (the spares spare a second sort when
    another claimer holds the head), and the candidates are locked in that
    order, never more at once than are still needed: the rows taken are the
    first ones of the order that nobody else holds, as with one locking read.
    """
    alias = db.alias()
    with transaction.atomic(using=alias):
        taken: list[int] = []
        seen: list[int] = []
        while len(taken) < opts.limit:
            need = opts.limit - len(taken)
            candidates = list(
                _eligible(opts).exclude(id__in=seen).values_list("id", flat=True)[: 2 * need]
            )
            if not candidates:
                break
            seen += candidates
            while candidates and len(taken) < opts.limit:
                chunk = candidates[: opts.limit - len(taken)]
                del candidates[: len(chunk)]
                taken += _lock_ready(opts, chunk)
        if not taken:
            return []
        Job.objects.using(alias).filter(id__in=taken).update(**_claim_changes(opts))
        return list(Job.objects.using(alias).filter(id__in=taken))


def _lock_ready(opts: ClaimOptions, chosen: list[int]) -> list[int]:
    """Lock the ``chosen`` rows that nobody else holds and that still qualify;
    their ids.

    The rows are read through the primary key alone (forced: on a small table
    the optimizer would rather scan the whole ready index, locking every row in
    it); readiness, queue, quarantine and fit are tested again on the latest
    version, locked, and under READ COMMITTED (Django's default) a row that no
    longer qualifies is unlocked at once. The paused-queue test stays in the plain
    read: in a locking read its sub-select would lock, and skip, rows of the
    queue table.
    """
    aliases, fit = _fit_predicate(opts)
    queues = Q() if opts.every_queue else Q(queue__in=list(opts.queues))
    locking = (
        Job.objects.using(db.alias())
        .filter(queues, id__in=chosen, state__in=READY_STATES)
        .filter(run_at__lte=Now())
        .filter(_suspect_predicate(opts))
        .alias(**aliases)
        .filter(fit)
        .order_by()
        .select_for_update(skip_locked=True)
        .values_list("id", flat=True)
    )
    sql, params = locking.query.get_compiler(db.alias()).as_sql()
    table = connections[db.alias()].ops.quote_name(Job._meta.db_table)
    by_key = sql.replace(f"FROM {table} ", f"FROM {table} FORCE INDEX (PRIMARY) ", 1)
    assert by_key != sql, sql
    with connections[db.alias()].cursor() as cursor:
        cursor.execute(by_key, params)
        return [row[0] for row in cursor.fetchall()]


def _eligible(opts: ClaimOptions) -> QuerySet[Job]:
    """Ready jobs in the requested queues that fit, in claim order."""
    paused = QueueControl.objects.using(db.alias()).filter(paused=True).values("name")
    qs = (
        Job.objects.using(db.alias())
        .filter(state__in=[JobState.PENDING, JobState.RETRYING])
        .filter(run_at__lte=Now())
        .exclude(queue__in=paused)
    )
    if not opts.every_queue:
        qs = qs.filter(queue__in=list(opts.queues))
    if opts.reserved_for is not None:
        qs = qs.filter(id=opts.reserved_for)
    qs = qs.filter(_suspect_predicate(opts))
    aliases, fit = _fit_predicate(opts)
    qs = qs.alias(**aliases).filter(fit)
    order: list = [F("priority").desc()]
    preferred = opts.preferred_hashes()
    if preferred:
        qs = qs.annotate(
            _unpreferred=Case(
                When(primary_input_hash__in=preferred, then=Value(0)),
                default=Value(1),
                output_field=IntegerField(),
            )
        )
        order.append(F("_unpreferred").asc())
    order += [F("run_at").asc(), F("id").asc()]
    return qs.order_by(*order)


def _suspect_predicate(opts: ClaimOptions) -> Q:
    """Suspects (jobs to run alone) excluded, only, or either (poison attribution)."""
    if opts.suspects == "exclude":
        return ~Q(quarantine=Quarantine.SUSPECT)
    if opts.suspects == "only":
        return Q(quarantine=Quarantine.SUSPECT)
    return Q()


def _fit_predicate(opts: ClaimOptions) -> tuple[dict[str, object], Q]:
    """The fit test as (aliases, predicate), evaluated inside the SELECT."""
    if opts.is_unbounded():
        # The resource model is off for this caller: everything is eligible,
        # custom-key jobs included (the backward-compatibility guarantee).
        return {}, Q()
    budget = opts.budget or {}
    predicate = Q()
    for key in STANDARD_KEYS:
        if key in budget:  # an absent key is unconstrained; a present 0 is a limit
            predicate &= Q(**{f"{key}__lte": budget[key]})
    # Custom keys: every key the job needs must be offered. Strip each offered
    # ",key," from the job's delimited string; exactly a subset leaves ",". The
    # delimiters stop "fpga" from matching "fpga-large", and stripping (rather
    # than a substring search) makes the test subset containment, whatever order
    # or extra keys the offer has. Bounded with nothing offered: no custom jobs.
    remaining: F | Replace = F("custom_keys")
    for key in sorted(set(opts.custom_keys)):
        remaining = Replace(remaining, Value(f"{SEP}{key}{SEP}"), Value(SEP))
    custom = Q(custom_keys="")
    if opts.custom_keys:
        custom |= Q(_custom_left=SEP)
        return {"_custom_left": remaining}, predicate & custom
    return {}, predicate & custom


def _claim_changes(opts: ClaimOptions) -> dict[str, object]:
    changes: dict[str, object] = {
        "state": JobState.RUNNING,
        # The start of this attempt. Also what reclaim measures an unleased job's
        # silence from, so it must be fresh on every claim.
        "started_at": Now(),
        "updated_at": Now(),
    }
    if opts.alone:
        changes["quarantine"] = Quarantine.ALONE
    if opts.grants():
        assert opts.lease_ttl is not None
        changes.update(
            worker_id=opts.worker_id,
            lease_expires_at=db.now_plus(opts.lease_ttl),
            lease_epoch=F("lease_epoch") + 1,
            heartbeat_at=Now(),
        )
    return changes
