"""Where a drain's time goes: one drain, sampled from the side.

    bench/.venvs/dispatch_jobs/bin/python -m bench.diagnose --system dispatch_jobs \
        --processes 2 --jobs 50000
    bench/.venvs/pgqueuer/bin/python -m bench.diagnose --system pgqueuer --processes 2

Fills ``--jobs`` no-op jobs, starts ``--processes`` workers at the tuned
settings (as ``drain_tuned``/``drain_2proc`` do) and, while they drain, samples
every ``--interval`` seconds from a separate connection:

- ``pg_stat_activity`` of the bench database: each backend's state and wait
  event (``active/CPU`` when it runs, ``Lock/transactionid`` when it waits for
  another transaction's row lock, ``Client/ClientRead`` when it waits for its
  worker, ...), counted over the samples;
- ``pg_locks``: how many lock requests were not granted;
- CPU from ``/proc``: the worker processes (and their children) against the
  PostgreSQL backends serving the bench database, in CPU-seconds and in
  microseconds per completed job.

Prints the drain rate, the machine's load average, and those tables. The CPU
split is what tells a drain bound by the worker's Python (one GIL per process)
from one bound by the database, and the wait events show lock waits between
concurrent claims, completions and renewals.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import threading
import time
from typing import Any

from .databases import libpq_dsn
from .processes import _descendants, wait_until
from .systems import load

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU of one process (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def context_switches(pid: int) -> int:
    """Voluntary + involuntary context switches of every thread of ``pid``: a
    thread hand-off (a queue, an event, the GIL) costs one or two."""
    total = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/status") as status:
                for line in status:
                    if "ctxt_switches" in line:
                        total += int(line.split()[-1])
        except OSError:
            continue
    return total


class Sampler(threading.Thread):
    """Samples activity, locks and CPU until ``stop`` is set."""

    def __init__(self, url: str, roots: list[int], interval: float) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.roots = roots
        self.interval = interval
        self.stop = threading.Event()
        self.waits: collections.Counter[str] = collections.Counter()
        self.waits_by_query: collections.Counter[str] = collections.Counter()
        self.ungranted: list[int] = []
        self.samples = 0
        self.worker_cpu: dict[int, float] = {}
        self.backend_cpu: dict[int, float] = {}
        self.start_cpu: dict[int, float] = {}
        self.switches: dict[int, int] = {}

    def run(self) -> None:
        import psycopg

        dbname = self.url.rsplit("/", 1)[1]
        with psycopg.connect(libpq_dsn(self.url), autocommit=True) as conn:
            mine = conn.info.backend_pid
            while not self.stop.is_set():
                rows = conn.execute(
                    "SELECT pid, state, coalesce(wait_event_type, 'CPU'), "
                    "coalesce(wait_event, ''), left(regexp_replace(query, '\\s+', ' ', 'g'), 60) "
                    "FROM pg_stat_activity WHERE datname = %s AND pid <> %s "
                    "AND backend_type = 'client backend'",
                    [dbname, mine],
                ).fetchall()
                locks = conn.execute("SELECT count(*) FROM pg_locks WHERE NOT granted").fetchone()
                self.samples += 1
                self.ungranted.append(int(locks[0]) if locks else 0)
                for pid, state, kind, event, query in rows:
                    label = f"{state}/{kind}:{event}" if state == "active" else str(state)
                    self.waits[label] += 1
                    if state == "active" and kind != "CPU":
                        self.waits_by_query[f"{kind}:{event} <- {query}"] += 1
                    self._cpu(self.backend_cpu, pid)
                for root in self.roots:
                    for pid in [root, *_descendants(root)]:
                        self._cpu(self.worker_cpu, pid)
                        self.switches[pid] = context_switches(pid) or self.switches.get(pid, 0)
                time.sleep(self.interval)
            # A last reading of everything seen, so the totals cover the drain.
            for table in (self.backend_cpu, self.worker_cpu):
                for pid in table:
                    self._cpu(table, pid)

    def _cpu(self, table: dict[int, float], pid: int) -> None:
        now = cpu_seconds(pid)
        if pid not in self.start_cpu:
            self.start_cpu[pid] = now
        if now:
            table[pid] = now - self.start_cpu[pid]


CLAIM_INDEXES = ("dj_job_ready", "dj_job_lease", "dj_job_suspect")


def drop_admin_indexes(url: str) -> list[str]:
    """Drop every index of the job table but the primary key, the replay link's
    unique index and the claim's own. Scratch databases only."""
    import psycopg

    with psycopg.connect(libpq_dsn(url), autocommit=True) as conn:
        names = [
            row[0]
            for row in conn.execute(
                "SELECT i.relname FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid "
                "JOIN pg_class t ON t.oid = x.indrelid WHERE t.relname = 'dispatch_jobs_job' "
                "AND NOT x.indisprimary AND NOT x.indisunique"
            ).fetchall()
            if row[0] not in CLAIM_INDEXES
        ]
        for name in names:
            conn.execute(f'DROP INDEX "{name}"')
    return names


def database_counters(url: str) -> dict[str, float]:
    """Transactions, statements' row changes and WAL of the bench database so far:
    their difference over a drain, per job, says how many round trips and how
    much writing each job costs."""
    import psycopg

    dbname = url.rsplit("/", 1)[1]
    with psycopg.connect(libpq_dsn(url), autocommit=True) as conn:
        commits, rollbacks = conn.execute(
            "SELECT xact_commit, xact_rollback FROM pg_stat_database WHERE datname = %s",
            [dbname],
        ).fetchone() or (0, 0)
        tables = conn.execute(
            "SELECT coalesce(sum(n_tup_ins), 0), coalesce(sum(n_tup_upd), 0), "
            "coalesce(sum(n_tup_hot_upd), 0), coalesce(sum(n_tup_del), 0) "
            "FROM pg_stat_user_tables"
        ).fetchone() or (0, 0, 0, 0)
        wal = conn.execute("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn").fetchone()
        conn.execute("SELECT pg_stat_clear_snapshot()")
    return {
        "commits": float(commits),
        "rollbacks": float(rollbacks),
        "rows_inserted": float(tables[0]),
        "rows_updated": float(tables[1]),
        "rows_hot_updated": float(tables[2]),
        "rows_deleted": float(tables[3]),
        "wal_bytes": float(wal[0]) if wal else 0.0,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--system", default="dispatch_jobs")
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--jobs", type=int, default=50_000)
    parser.add_argument("--mode", default="tuned")
    parser.add_argument("--interval", type=float, default=0.02)
    parser.add_argument("--cap", type=float, default=60.0)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--claim-indexes-only",
        action="store_true",
        help="dispatch_jobs: drop the job table's indexes but the claim's (ready, lease, "
        "suspect), the key and the replay link on this scratch database first: what "
        "the index diet could buy a drain",
    )
    parser.add_argument(
        "--sql",
        action="append",
        default=[],
        metavar="STATEMENT",
        help="run STATEMENT on the scratch database after its set-up, before the fill "
        "(repeatable): an experiment's schema change, e.g. an index dropped",
    )
    args = parser.parse_args(argv)

    system = load(args.system, "postgres")
    system.prepare()
    if args.sql:
        import psycopg

        with psycopg.connect(libpq_dsn(system.url), autocommit=True) as conn:
            for statement in args.sql:
                conn.execute(statement)
                print(f"ran: {statement}", flush=True)
    if args.claim_indexes_only:
        dropped = drop_admin_indexes(system.url)
        print(f"dropped {len(dropped)} job indexes: {', '.join(dropped)}", flush=True)
    system.filled(args.jobs)
    counters_before = database_counters(system.url)
    load_before = os.getloadavg()
    workers = [system.start_worker(args.mode, f"diag-{i}") for i in range(args.processes)]
    # Sampling starts at the first completed job: start-up (imports, Django's
    # set-up, connecting) is not the hot path, and counting its CPU would charge
    # it to every job.
    wait_until(lambda: system.finished() > 0 or not any(w.alive() for w in workers), 60)
    sampled_from = system.finished()
    sampler = Sampler(system.url, [w.pid for w in workers], args.interval)
    sampler.start()
    started = time.monotonic()
    try:
        deadline = started + args.cap
        while time.monotonic() < deadline:
            done = system.finished()
            if done >= args.jobs or not any(w.alive() for w in workers):
                break
            time.sleep(0.05)
    finally:
        sampler.stop.set()
        sampler.join()
        for worker in workers:
            worker.stop()
    done = system.finished()
    counters = database_counters(system.url)
    per_job = {
        key: round((counters[key] - counters_before[key]) / max(done, 1), 3) for key in counters
    }
    span = system.finish_span()
    rate = (done - 1) / max(span[1] - span[0], 1e-6) if span else 0.0
    sampled = max(done - sampled_from, 1)
    worker_cpu = sum(sampler.worker_cpu.values())
    backend_cpu = sum(sampler.backend_cpu.values())
    report: dict[str, Any] = {
        "system": args.system,
        "processes": args.processes,
        "completed": done,
        "rate": round(rate),
        "span_s": round(span[1] - span[0], 3) if span else None,
        "load_before": [round(x, 2) for x in load_before],
        "worker_cpu_s": round(worker_cpu, 2),
        "backend_cpu_s": round(backend_cpu, 2),
        "worker_us_per_job": round(worker_cpu / sampled * 1e6, 1),
        "backend_us_per_job": round(backend_cpu / sampled * 1e6, 1),
        "worker_switches_per_job": round(sum(sampler.switches.values()) / max(done, 1), 2),
        "samples": sampler.samples,
        "ungranted_locks_mean": round(sum(sampler.ungranted) / max(sampler.samples, 1), 3),
        "ungranted_locks_max": max(sampler.ungranted, default=0),
        "per_job": per_job,
        "backend_states": dict(sampler.waits.most_common(12)),
        "waits_by_query": dict(sampler.waits_by_query.most_common(12)),
    }
    if args.json:
        print(json.dumps(report))
        return 0
    for key, value in report.items():
        if key == "per_job":
            print(f"{key}: " + ", ".join(f"{k} {v}" for k, v in value.items()))
        elif isinstance(value, dict):
            print(f"{key}:")
            for label, count in value.items():
                share = count / max(sampler.samples, 1)
                print(f"  {count:6d}  ({share:5.2f} per sample)  {label}")
        else:
            print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
