"""The index diet's two guarantees at a million rows, before and after it in
the same run: the admin job list (each filter and sort: median ms of one
request through Django's test client, and its reads) and the claim rate
(``store.claim_jobs``, 100 per call, leased) beside 1M finished rows against an
empty table. Run by hand:

    BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_index_admin \\
        .venv/bin/python -m bench.admin_list --rows 1000000 --before 0008

``--before`` names the dispatch_jobs migration to compare with: the script
measures at the latest migration, migrates back to ``--before`` (the indexes
as they were, rebuilt on the big table), measures, migrates forward and
measures again, so drift on a shared machine shows as the gap between the two
"after" columns. The table is built with the bench's 1M-row builder
(``systems.dispatch_jobs.insert_rows``): completed jobs and a few thousand
failed, in a table emptied first.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

PAGES = (
    ("newest first", "/admin/dispatch_jobs/job/"),
    ("state=completed", "/admin/dispatch_jobs/job/?state=completed"),
    ("state=failed", "/admin/dispatch_jobs/job/?state=failed"),
    ("queue=default", "/admin/dispatch_jobs/job/?queue=default"),
    ("worker=bench", "/admin/dispatch_jobs/job/?worker=bench"),
    ("sort=-completed_at", "/admin/dispatch_jobs/job/?sort=-completed_at"),
    ("sort=-priority", "/admin/dispatch_jobs/job/?sort=-priority"),
    ("finished=24h", "/admin/dispatch_jobs/job/?finished=24h"),
    ("finished=older", "/admin/dispatch_jobs/job/?finished=older"),
    ("enqueued=1h", "/admin/dispatch_jobs/job/?enqueued=1h"),
)
CLAIMS = 20_000


def _setup_django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.django_project.settings")
    os.environ.setdefault("BENCH_SYSTEM", "dispatch_jobs")
    import django

    django.setup()
    _migrate(None)


def _migrate(target: str | None) -> None:
    from django.core.management import call_command

    if target is None:
        call_command("migrate", verbosity=0)
    else:
        call_command("migrate", "dispatch_jobs", target, verbosity=0)


def _vacuum() -> None:
    from django.db import connection

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE dispatch_jobs_job")


def _clear_live() -> None:
    """Drop the rows a claim run left (running): the table is back to its finished rows."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "DELETE FROM dispatch_jobs_job WHERE state NOT IN ('completed', 'failed', 'cancelled')"
        )


def _claim_rate(reps: int) -> tuple[float, float]:
    """The claim rate (median of ``reps``) and, on PostgreSQL, the buffers one
    claim of 100 touches per job claimed (``EXPLAIN (ANALYZE, BUFFERS)`` of the
    store's own statement: the work, whatever the load)."""
    from .systems.dispatch_jobs import claim_loop, insert_rows

    rates = []
    blocks = float("nan")
    for rep in range(reps):
        probe = rep == 0 and connection_vendor() == "postgresql"
        insert_rows(CLAIMS + (200 if probe else 0), "pending")
        _vacuum()
        if probe:
            blocks = _claim_blocks()
        rates.append(claim_loop(CLAIMS, 100))
        _clear_live()
        _vacuum()  # the deleted rows sit at the top of the id range: gone before a page reads
    return statistics.median(rates), blocks


def connection_vendor() -> str:
    from django.db import connection

    return connection.vendor


def _claim_blocks() -> float:
    """Claims 200 jobs: one call to capture the statement, one EXPLAINed."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from .systems.dispatch_jobs import claim_loop

    with CaptureQueriesContext(connection) as captured:
        claim_loop(100, 100)
    (sql,) = [q["sql"] for q in captured.captured_queries if "FOR UPDATE" in q["sql"]]
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql)
        plan = cursor.fetchone()[0][0]["Plan"]
    rows = plan.get("Actual Rows") or 100
    return (plan["Shared Hit Blocks"] + plan["Shared Read Blocks"]) / rows


def _build(rows: int) -> None:
    from .systems.dispatch_jobs import insert_rows

    started = time.perf_counter()
    insert_rows(rows - 3_000, "completed")
    insert_rows(3_000, "failed")
    print(f"  inserted {rows:,} rows in {time.perf_counter() - started:.1f} s")
    _vacuum()


def _blocks(url: str) -> float:
    """PostgreSQL: the buffers (8 kB pages, cached or read) the page's
    statements on the job table touch, by ``EXPLAIN (ANALYZE, BUFFERS)``: the
    work, whatever the machine's load."""
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    if connection.vendor != "postgresql":
        return float("nan")
    client = Client()
    client.force_login(get_user_model().objects.get(username="bench"))
    with CaptureQueriesContext(connection) as captured:
        client.get(url)
    total = 0
    with connection.cursor() as cursor:
        for query in captured.captured_queries:
            if '"dispatch_jobs_job"' not in query["sql"]:
                continue
            cursor.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + query["sql"])
            plan = cursor.fetchone()[0][0]["Plan"]
            total += plan["Shared Hit Blocks"] + plan["Shared Read Blocks"]
    return float(total)


def _measure(label: str, reps: int) -> dict[str, float]:
    from .systems.dispatch_jobs import admin_list

    started = time.perf_counter()
    rate, blocks = _claim_rate(reps)
    metrics = {"claim": rate, "claim_blocks": blocks}
    metrics.update(admin_list(PAGES, reps=reps))
    for page, url in PAGES:
        metrics[f"{page}_blocks"] = _blocks(url)
    print(f"  measured {label} in {time.perf_counter() - started:.0f} s", flush=True)
    return metrics


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--before", default="", help="the migration to compare with")
    args = parser.parse_args()
    _setup_django()
    from django.db import connection

    print(f"admin list and claim on {connection.vendor}, {args.rows:,} finished rows")
    print(f"  load average {os.getloadavg()[0]:.1f} at the start", flush=True)
    states = ["after"] + (["before", "after again"] if args.before else [])
    empty: dict[str, float] = {}
    empty_blocks: dict[str, float] = {}
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM dispatch_jobs_job")
    for state in states:
        _migrate(args.before if state == "before" else None)
        empty[state], empty_blocks[state] = _claim_rate(args.reps)
        print(f"  claim, empty table, {state}: {empty[state]:,.0f} jobs/s", flush=True)
    _migrate(None)
    _build(args.rows)
    # One pass not reported: the first reads of a freshly built table set its
    # rows' hint bits and fill the caches, and made the first column the slow one.
    _measure("a warm-up pass (not reported)", 1)
    full: dict[str, dict[str, float]] = {}
    for state in states:
        _migrate(args.before if state == "before" else None)
        _vacuum()
        full[state] = _measure(state, args.reps)
    _migrate(None)
    print(f"  load average {os.getloadavg()[0]:.1f} at the end")
    print()
    print("admin pages: median ms, reads (SELECTs), buffers the job-table statements touch")
    print(f"{'(medians of ' + str(args.reps) + ')':28s}" + "".join(f"{s:>24s}" for s in states))
    print(f"{'claim, empty table (jobs/s)':28s}" + "".join(f"{empty[s]:24,.0f}" for s in states))
    print(
        f"{'claim beside 1M (jobs/s)':28s}" + "".join(f"{full[s]['claim']:24,.0f}" for s in states)
    )
    print(
        f"{'  as % of empty':28s}"
        + "".join(f"{100 * full[s]['claim'] / empty[s]:23.1f}%" for s in states)
    )
    print(
        f"{'claim, buffers/job, empty':28s}" + "".join(f"{empty_blocks[s]:24.2f}" for s in states)
    )
    print(
        f"{'claim, buffers/job, 1M':28s}"
        + "".join(f"{full[s]['claim_blocks']:24.2f}" for s in states)
    )
    for label, _ in PAGES:
        cells = "".join(
            f"{full[s][label + '_ms']:7.1f} ms {full[s][label + '_reads']:1.0f} r "
            f"{full[s][label + '_blocks']:4.0f} b"
            for s in states
        )
        print(f"{'admin ' + label:28s}{cells}")


if __name__ == "__main__":
    main()
