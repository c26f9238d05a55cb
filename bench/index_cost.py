"""What the job table's indexes cost a drain: a raw claim-and-complete loop on a
scratch copy of the table, once per index set. Run by hand:

    bench/.venvs/dispatch_jobs/bin/python -m bench.index_cost \\
        --db postgres://postgres@127.0.0.1:5432/bench_dispatch_jobs

The database must hold dispatch_jobs' migrated ``dispatch_jobs_job`` table with
at least one row (any bench run leaves one). The scratch table ``index_cost_job``
is created with the job table's columns and defaults, filled with ``--jobs``
pending copies of one row, and drained by one connection: claim ``--batch`` rows
with one ``UPDATE ... FOR UPDATE SKIP LOCKED`` (the lease columns set, as the
store's claim does), then complete them with one ``UPDATE``, each in its own
transaction. No Python work per job, no usage rows: what is left is the
database's cost, and the difference between index sets is what the indexes cost.
"""

from __future__ import annotations

import argparse
import statistics
import time

import psycopg

TABLE = "index_cost_job"
# The job table's indexes (models.Job.Meta.indexes and migration 0003), by name.
INDEXES = {
    "ready": "(queue, priority DESC, run_at, id) WHERE state IN ('pending', 'retrying')",
    "lease": "(lease_expires_at) WHERE state = 'running'",
    "state": "(state, id DESC)",
    "queue": "(queue, id DESC)",
    "name": "(name, id DESC)",
    "scope": "(scope_app_id, scope_org_id, id DESC)",
    "org": "(scope_org_id, id DESC)",
    "priority": "(priority, id)",
    "completed": "(completed_at, id)",
    "created": "(created_at, id)",
    "worker": "(worker_id, id DESC)",
    "replay": "(replay_of_id)",
    "pattern": "(name varchar_pattern_ops)",
    "payload": "USING gin (payload jsonb_path_ops)",
}
SETS = {
    "claim indexes only (ready, lease)": ("ready", "lease"),
    "all of dispatch_jobs' indexes": tuple(INDEXES),
    "all but the admin's": ("ready", "lease", "replay"),
}
CLAIM = (
    f"UPDATE {TABLE} SET state = 'running', started_at = now(), worker_id = 'w', "
    "lease_expires_at = now() + interval '60 seconds', lease_epoch = lease_epoch + 1, "
    f"heartbeat_at = now() WHERE id = ANY(ARRAY(SELECT id FROM {TABLE} "
    "WHERE state IN ('pending', 'retrying') AND queue = 'default' AND run_at <= now() "
    "ORDER BY priority DESC, run_at, id LIMIT %s FOR UPDATE SKIP LOCKED)) RETURNING id"
)
# The fence is tested on the row locked by key, as the store's completion does.
COMPLETE = (
    f"UPDATE {TABLE} SET state = 'completed', completed_at = now(), updated_at = now(), "
    "attempts = '[{\"attempt\": 1}]' WHERE id = ANY(%s)"
)


def rebuild(cur: psycopg.Cursor, indexes: tuple[str, ...], jobs: int) -> None:
    cur.execute(f"DROP TABLE IF EXISTS {TABLE}")
    cur.execute(f"CREATE TABLE {TABLE} (LIKE dispatch_jobs_job INCLUDING DEFAULTS)")
    cur.execute(f"CREATE SEQUENCE IF NOT EXISTS {TABLE}_seq")
    cur.execute(f"ALTER TABLE {TABLE} ALTER id SET DEFAULT nextval('{TABLE}_seq')")
    cur.execute(f"ALTER TABLE {TABLE} ADD PRIMARY KEY (id)")
    for name in indexes:
        cur.execute(f"CREATE INDEX {TABLE}_{name} ON {TABLE} {INDEXES[name]}")
    cur.execute(
        "SELECT string_agg(quote_ident(column_name), ', ') FROM information_schema.columns "
        "WHERE table_name = 'dispatch_jobs_job' AND column_name NOT IN ('id', 'state', "
        "'replay_of_id')"
    )
    row = cur.fetchone()
    assert row is not None
    columns = row[0]
    cur.execute(
        f"INSERT INTO {TABLE} ({columns}, state) SELECT {columns}, 'pending' "
        "FROM (SELECT * FROM dispatch_jobs_job LIMIT 1) AS one, generate_series(1, %s)",
        [jobs],
    )
    if not cur.rowcount:
        raise SystemExit("dispatch_jobs_job is empty: run a bench scenario first.")
    cur.execute(f"VACUUM ANALYZE {TABLE}")


def drain(cur: psycopg.Cursor, batch: int) -> float:
    done = 0
    started = time.perf_counter()
    while True:
        cur.execute(CLAIM, [batch])
        ids = [row[0] for row in cur.fetchall()]
        if not ids:
            break
        cur.execute(COMPLETE, [ids])
        done += len(ids)
    return done / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True, help="a PostgreSQL URL")
    parser.add_argument("--jobs", type=int, default=50_000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    with psycopg.connect(args.db, autocommit=True) as conn, conn.cursor() as cur:
        for label, indexes in SETS.items():
            rates = []
            for _ in range(args.reps):
                rebuild(cur, indexes, args.jobs)
                rates.append(drain(cur, args.batch))
            print(
                f"{label:40s} {len(indexes) + 1:2d} indexes  "
                f"{statistics.median(rates):8,.0f} jobs/s (median of {args.reps})"
            )
        cur.execute(f"DROP TABLE IF EXISTS {TABLE}")
        cur.execute(f"DROP SEQUENCE IF EXISTS {TABLE}_seq")


if __name__ == "__main__":
    main()
