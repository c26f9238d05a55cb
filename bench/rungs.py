"""The execution rungs side by side: no-op throughput and per-job overhead, run by hand.

    .venv/bin/python -m bench.rungs --db postgres://postgres@127.0.0.1:5432/perf_r
    .venv/bin/python -m bench.rungs --db ... --jobs 5000 --reps 5

Each repetition empties the job table, enqueues ``--jobs`` no-op jobs with
``store.enqueue_jobs`` and drains them with one ``runjobs --burst`` process per
rung in turn (``--execution in-process``, then ``--execution subprocess``), the
same arguments otherwise (concurrency 2, prefetch 1000, no maintenance).

Reported per rung, as medians over ``--reps``: jobs/s of the drain, and the CPU
time per job in µs of the worker *and its child processes* (user + system, from
``getrusage(RUSAGE_CHILDREN)`` after the worker exits; it reaps its children).
Both are net of a run of the same command on an empty queue (start-up, the
children's start-up, shutdown). Then the subprocess rung's overhead per job:
the difference of the two rungs' wall time per job, and of their CPU per job,
and the ratio of their rates. The database named in ``--db`` is migrated and
emptied: use one of its own.
"""

from __future__ import annotations

import argparse
import statistics

from bench import burst

RUNGS = ("in-process", "subprocess")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True, help="database URL (emptied!)")
    parser.add_argument("--jobs", type=int, default=2_000)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    env = burst.setup(args.db)
    results: dict[str, list[tuple[float, float, float]]] = {}
    for _rep in range(args.reps):
        for rung in RUNGS:
            results.setdefault(rung, []).append(
                burst.net_drain(env, ["--execution", rung], args.jobs)
            )
    medians = {}
    for rung, samples in results.items():
        rate, wall, cpu = (statistics.median(s[i] for s in samples) for i in range(3))
        medians[rung] = (rate, wall, cpu)
        runs = ", ".join(f"{s[0]:.0f}/s {s[2] * 1e6:.0f}µs" for s in samples)
        print(f"{rung:11} {rate:8.0f} jobs/s  {cpu * 1e6:6.0f} µs CPU/job   ({runs})")
    (in_rate, in_wall, in_cpu), (sub_rate, sub_wall, sub_cpu) = medians[RUNGS[0]], medians[RUNGS[1]]
    print(
        f"subprocess overhead per job: {(sub_wall - in_wall) * 1e6:.0f} µs wall, "
        f"{(sub_cpu - in_cpu) * 1e6:.0f} µs CPU; throughput {sub_rate / in_rate:.2f}x in-process"
    )


if __name__ == "__main__":
    main()
