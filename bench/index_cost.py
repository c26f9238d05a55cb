"""What the job table's indexes cost each state change: raw SQL on a scratch
copy of the table, once per index set, every state change timed on its own.
Run by hand:

    .venv/bin/python -m bench.index_cost \\
        --db postgres://postgres@127.0.0.1:5432/bench_dispatch_jobs
    .venv/bin/python -m bench.index_cost --db ... --list     # the live table's indexes
    .venv/bin/python -m bench.index_cost --db ... --each     # one admin index at a time
    .venv/bin/python -m bench.index_cost --db ... --set 0017 --narrow  # and a narrower row

The database must hold dispatch_jobs' migrated ``dispatch_jobs_job`` table with
at least one row (any bench run leaves one). For each index set the scratch
table ``index_cost_job`` is created with the job table's columns and defaults
and that set's indexes, then one connection, in autocommit (a transaction per
statement, as the store's verbs run):

- **enqueue**: inserts ``--jobs`` pending copies of the row, ``--batch`` per
  ``INSERT``;
- **claim**: takes ``--batch`` ready rows with one ``UPDATE ... FOR UPDATE SKIP
  LOCKED`` (the columns the store's claim sets: state, start, worker, lease);
- **complete** (even batches) or **retry** (odd batches): one ``UPDATE`` of the
  columns the store's batched completion sets (state, outcome, finish time or
  next run time). A retried row is due in an hour, so it is not claimed again.

No Python work per job, no usage rows, and no wait for the WAL flush at commit
(``synchronous_commit = off``; ``--sync`` waits): what is left is the
database's work, and the difference between index sets is what the indexes
cost. Sets are interleaved (set A, set B, ... then again), so drift on a shared
machine spreads over all of them; each figure is the median of ``--reps``.
"""

from __future__ import annotations

import argparse
import statistics
import time

import psycopg

TABLE = "index_cost_job"
FINISHED = "state IN ('completed', 'failed', 'cancelled')"
# The job table's indexes by the name they have there (without the "dj_job_"
# prefix), as migrations 0001-0008 build them on PostgreSQL ...
INDEXES = {
    "ready": "(queue, priority DESC, run_at, id) WHERE state IN ('pending', 'retrying')",
    "lease": "(lease_expires_at) WHERE state = 'running'",
    "suspect": "(queue, run_at) WHERE quarantine = 1 AND state IN ('pending', 'retrying')",
    "replay": "UNIQUE (replay_of_id)",  # the OneToOneField's constraint
    "state_id": "(state, id DESC)",
    "queue_id": "(queue, id DESC)",
    "name_id": "(name, id DESC)",
    "scope_id": "(scope_app_id, scope_org_id, id DESC)",
    "org_id": "(scope_org_id, id DESC)",
    "priority_id": "(priority, id)",
    "completed_id": "(completed_at, id)",
    "created_id": "(created_at, id)",
    "worker_id": "(worker_id, id DESC)",
    "name_pattern": "(name varchar_pattern_ops)",
    "payload_gin": "USING gin (payload jsonb_path_ops)",
}
# ... and as migration 0009 (the index diet) leaves them.
DIET = {
    "completed_id~": "(completed_at, id) WHERE completed_at IS NOT NULL",
    "name_id~": "(name varchar_pattern_ops, id DESC)",  # also serves LIKE 'prefix%'
}
# A proposal measured, not built: every admin filter/sort index partial on the
# finished states (the admin would need a live/finished split of its list).
PROPOSAL = {
    f"{name}/finished": f"{INDEXES[name].split(' WHERE ')[0]} WHERE {FINISHED}"
    for name in (
        "state_id",
        "queue_id",
        "name_id",
        "scope_id",
        "org_id",
        "priority_id",
        "completed_id",
        "created_id",
        "worker_id",
        "name_pattern",
        "payload_gin",
    )
}
# The same, partial on "not running" instead: a claim writes none of them (the
# admin would list running rows, few, through dj_job_lease beside the rest).
PROPOSAL_LIVE = {
    name.replace("/finished", "/not_running"): definition.replace(
        f"WHERE {FINISHED}", "WHERE state <> 'running'"
    )
    for name, definition in PROPOSAL.items()
}
# ... and as migration 0015 (the second step) leaves them: the filter indexes
# partial on the finished states; the state index and the sort keys' whole.
FILTERS = ("queue_id", "name_id~", "scope_id", "org_id", "worker_id", "payload_gin")
DIET2 = {
    f"{name.rstrip('~')}/finished~": f"{({**INDEXES, **DIET})[name]} WHERE {FINISHED}"
    for name in FILTERS
}
# ... and as migration 0016 leaves the replay link's: unique among the rows that
# replay a job, with no entry for the others (NULL, nearly every row).
REPLAY = {"replay~": "UNIQUE (replay_of_id) WHERE replay_of_id IS NOT NULL"}
# ... and as migration 0017 leaves the state index and the two sort keys': partial
# on "not running", so a claim writes none of them (running rows, a fleet's
# concurrency, are listed through dj_job_lease).
NOT_RUNNING = ("state_id", "priority_id", "created_id")
DIET4 = {f"{name}~": f"{INDEXES[name]} WHERE state <> 'running'" for name in NOT_RUNNING}
DEFINITIONS = {**INDEXES, **DIET, **PROPOSAL, **PROPOSAL_LIVE, **DIET2, **REPLAY, **DIET4}
CLAIM_OWN = ("ready", "lease", "suspect")
BEFORE = tuple(INDEXES)
AFTER = tuple(n for n in INDEXES if n not in ("completed_id", "name_id", "name_pattern")) + tuple(
    DIET
)
STEP2 = tuple(n for n in AFTER if n not in FILTERS) + tuple(DIET2)
STEP3 = tuple(n for n in STEP2 if n != "replay") + tuple(REPLAY)
STEP4 = tuple(n for n in STEP3 if n not in NOT_RUNNING) + tuple(DIET4)
SETS = {
    "claim's own (ready, lease, suspect)": CLAIM_OWN,
    "main, before the diet (0008)": BEFORE,
    "after the diet (0009)": AFTER,
    "after the second step (0015)": STEP2,
    "after the replay link's (0016)": STEP3,
    "after the state and sort keys' (0017)": STEP4,
    "proposal: admin's partial on finished": CLAIM_OWN + ("replay",) + tuple(PROPOSAL),
    "proposal: admin's partial on not running": CLAIM_OWN + ("replay",) + tuple(PROPOSAL_LIVE),
}
CLAIM = (
    f"UPDATE {TABLE} SET state = 'running', started_at = now(), updated_at = now(), "
    "worker_id = 'w', lease_expires_at = now() + interval '60 seconds', "
    f"lease_epoch = lease_epoch + 1, heartbeat_at = now() WHERE id = ANY(ARRAY(SELECT id "
    f"FROM {TABLE} WHERE state IN ('pending', 'retrying') AND queue = 'default' "
    "AND run_at <= now() ORDER BY priority DESC, run_at, id LIMIT %s "
    "FOR UPDATE SKIP LOCKED)) RETURNING id"
)
COMPLETE = (
    f"UPDATE {TABLE} SET state = 'completed', completed_at = now(), updated_at = now(), "
    "attempts = '[{\"attempt\": 1}]', quarantine = 0 WHERE id = ANY(%s)"
)
RETRY = (
    f"UPDATE {TABLE} SET state = 'retrying', retry_count = retry_count + 1, "
    "run_at = now() + interval '1 hour', updated_at = now(), last_error = 'boom', "
    "attempts = '[{\"attempt\": 1}]', quarantine = 0 WHERE id = ANY(%s)"
)
OPS = ("enqueue", "claim", "complete", "retry")


# What a freshly enqueued row holds, whatever the row copied held.
FRESH = {
    "state": "'pending'",
    "replay_of_id": "NULL",
    "quarantine": "0",
    "worker_id": "''",
    "started_at": "NULL",
    "completed_at": "NULL",
    "heartbeat_at": "NULL",
    "lease_expires_at": "NULL",
    "run_at": "now()",
}


# The columns a job without resources, inputs, cancellation, replay or tracing
# leaves at their defaults (or NULL) through every state change: what ``--narrow``
# leaves out of the scratch table, to measure what the row's width costs.
RARELY_SET = (
    "artifact_bindings",
    "cpu",
    "memory",
    "disk",
    "gpu",
    "custom_keys",
    "resources",
    "resource_limits",
    "resource_class",
    "execution",
    "input_bytes",
    "primary_input_hash",
    "evict_count",
    "lone_evictions",
    "cancel_requested_at",
    "cancel_requested_by",
    "return_value",
    "trace_context",
)


def rebuild(cur: psycopg.Cursor, indexes: tuple[str, ...], narrow: bool = False) -> tuple[str, str]:
    """The empty scratch table with ``indexes`` (without ``RARELY_SET`` when
    ``narrow``); its columns and what an enqueue writes into them (the copied
    row's values, but for ``FRESH``)."""
    cur.execute(f"DROP TABLE IF EXISTS {TABLE}")
    cur.execute(f"CREATE TABLE {TABLE} (LIKE dispatch_jobs_job INCLUDING DEFAULTS)")
    for column in RARELY_SET if narrow else ():
        cur.execute(f'ALTER TABLE {TABLE} DROP COLUMN "{column}"')
    cur.execute(f"CREATE SEQUENCE IF NOT EXISTS {TABLE}_seq")
    cur.execute(f"ALTER SEQUENCE {TABLE}_seq RESTART")
    cur.execute(f"ALTER TABLE {TABLE} ALTER id SET DEFAULT nextval('{TABLE}_seq')")
    cur.execute(f"ALTER TABLE {TABLE} ADD PRIMARY KEY (id)")
    for name in indexes:
        definition = DEFINITIONS[name]
        unique = "UNIQUE " if definition.startswith("UNIQUE ") else ""
        definition = definition.removeprefix("UNIQUE ")
        label = name.replace("~", "_diet").replace("/", "_")[:40]
        cur.execute(f"CREATE {unique}INDEX {TABLE}_{label} ON {TABLE} {definition}")
    cur.execute(
        "SELECT column_name FROM information_schema.columns "
        f"WHERE table_name = '{TABLE}' AND column_name <> 'id' ORDER BY ordinal_position"
    )
    names = [str(r[0]) for r in cur.fetchall()]
    values = [FRESH.get(n, f'one."{n}"') for n in names]
    return ", ".join(f'"{n}"' for n in names), ", ".join(values)


class Tally:
    """Per state change: jobs, wall seconds, and the WAL the statements wrote
    (``EXPLAIN (ANALYZE, WAL)`` of each: records and bytes, this statement's
    only, whatever else the server is doing)."""

    def __init__(self) -> None:
        self.jobs = dict.fromkeys(OPS, 0)
        self.seconds = dict.fromkeys(OPS, 0.0)
        self.records = dict.fromkeys(OPS, 0)
        self.bytes = dict.fromkeys(OPS, 0)

    def execute(self, cur: psycopg.Cursor, op: str, sql: str, params: list, rows: int = 0) -> int:
        """Run ``sql`` for ``op``, which writes ``rows`` rows (or as many as it
        returns); how many that was."""
        started = time.perf_counter()
        cur.execute(f"EXPLAIN (ANALYZE, WAL, TIMING OFF, FORMAT JSON) {sql}", params)
        self.seconds[op] += time.perf_counter() - started
        row = cur.fetchone()
        assert row is not None
        plan = row[0][0]["Plan"]
        rows = rows or int(plan["Actual Rows"])
        self.jobs[op] += rows
        self.records[op] += plan["WAL Records"]
        self.bytes[op] += plan["WAL Bytes"]
        return rows

    def result(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for op in OPS:
            jobs = self.jobs[op] or 1
            out[op] = self.seconds[op] / jobs * 1e6
            out[f"{op}_wal"] = self.records[op] / jobs
            out[f"{op}_bytes"] = self.bytes[op] / jobs
        out["rate"] = 1e6 / (out["claim"] + out["complete"])
        return out


def run(
    cur: psycopg.Cursor, indexes: tuple[str, ...], jobs: int, batch: int, narrow: bool = False
) -> dict:
    """Per state change: µs per job and WAL records and bytes per job; and
    claim+complete jobs/s."""
    columns, values = rebuild(cur, indexes, narrow)
    cur.execute("SELECT count(*) FROM dispatch_jobs_job")
    if not cur.fetchone()[0]:  # type: ignore[index]
        raise SystemExit("dispatch_jobs_job is empty: run a bench scenario first.")
    tally = Tally()
    insert = (
        f"INSERT INTO {TABLE} ({columns}) SELECT {values} "
        "FROM (SELECT * FROM dispatch_jobs_job LIMIT 1) AS one, generate_series(1, %s)"
    )
    for start in range(0, jobs, batch):
        n = min(batch, jobs - start)
        tally.execute(cur, "enqueue", insert, [n], rows=n)
    cur.execute(f"VACUUM ANALYZE {TABLE}")
    turn = 0
    while tally.execute(cur, "claim", CLAIM, [batch]):
        cur.execute(f"SELECT id FROM {TABLE} WHERE state = 'running'")
        ids = [r[0] for r in cur.fetchall()]
        op = "complete" if turn % 2 == 0 else "retry"
        tally.execute(cur, op, COMPLETE if op == "complete" else RETRY, [ids], rows=len(ids))
        turn += 1
    return tally.result()


def list_indexes(cur: psycopg.Cursor) -> None:
    """The live job table's indexes, as the database describes them."""
    cur.execute(
        "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'dispatch_jobs_job' "
        "ORDER BY indexname"
    )
    rows = cur.fetchall()
    for name, definition in rows:
        print(f"{name:32s} {definition.split(' USING ', 1)[1]}")
    print(f"{len(rows)} indexes")


def measure(cur: psycopg.Cursor, sets: dict, args: argparse.Namespace) -> None:
    variants = {
        (f"{label}, narrow row" if narrow else label): (indexes, narrow)
        for label, indexes in sets.items()
        for narrow in ((False, True) if args.narrow else (False,))
    }
    runs: dict[str, list[dict]] = {label: [] for label in variants}
    for _ in range(args.reps):
        for label, (indexes, narrow) in variants.items():
            runs[label].append(run(cur, indexes, args.jobs, args.batch, narrow))
    head = "".join(f"{op:>16s}" for op in OPS)
    width = max(40, *(len(label) for label in variants))
    print(f"{'index set':{width}s} {'idx':>3s}{head} {'claim+complete':>15s}")
    unit = "".join(f"{'µs/job WAL/job':>16s}" for _ in OPS)
    print(f"{'':{width}s} {'':3s}{unit} {'jobs/s':>15s}")
    medians = {}
    for label, (indexes, _) in variants.items():
        rows = runs[label]
        med = medians[label] = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
        cells = "".join(f"{med[op]:9.1f}{med[op + '_wal']:7.2f}" for op in OPS)
        print(f"{label:{width}s} {len(indexes) + 1:3d}{cells} {med['rate']:15,.0f}")
    print(f"\n{'WAL bytes per job':{width}s}    " + "".join(f"{op:>16s}" for op in OPS))
    for label, med in medians.items():
        print(f"{label:{width}s}    " + "".join(f"{med[op + '_bytes']:16,.0f}" for op in OPS))
    print(
        f"(medians of {args.reps}; {args.jobs:,} jobs, {args.batch} per statement; WAL/job: "
        "WAL records per job, each index entry written is one)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True, help="a PostgreSQL URL")
    parser.add_argument("--jobs", type=int, default=50_000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument(
        "--sync",
        action="store_true",
        help="wait for each commit's WAL flush (off by default: on a shared machine the "
        "flush's latency drowns what the indexes cost)",
    )
    parser.add_argument(
        "--narrow",
        action="store_true",
        help="each set also on a table without the columns a plain job never sets (RARELY_SET)",
    )
    parser.add_argument("--list", action="store_true", help="list the live table's indexes")
    parser.add_argument(
        "--each", action="store_true", help="the claim's own indexes plus one other, for each"
    )
    parser.add_argument(
        "--set", action="append", default=[], help="only the sets whose name contains this"
    )
    args = parser.parse_args()
    with psycopg.connect(args.db, autocommit=True) as conn, conn.cursor() as cur:
        if not args.sync:
            cur.execute("SET synchronous_commit = off")
        if args.list:
            list_indexes(cur)
            return
        sets = SETS
        if args.each:
            others = [n for n in DEFINITIONS if n not in CLAIM_OWN and "/" not in n]
            sets = {"claim's own": CLAIM_OWN} | {f"+ {n}": CLAIM_OWN + (n,) for n in others}
        if args.set:
            sets = {name: v for name, v in sets.items() if any(part in name for part in args.set)}
        try:
            measure(cur, sets, args)
        finally:
            cur.execute(f"DROP TABLE IF EXISTS {TABLE}")
            cur.execute(f"DROP SEQUENCE IF EXISTS {TABLE}_seq")


if __name__ == "__main__":
    main()
