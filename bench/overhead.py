"""What observability costs a draining worker, run by hand.

    .venv/bin/python -m bench.overhead --db postgres://postgres@127.0.0.1:5432/perf_o
    .venv/bin/python -m bench.overhead --db ... --mode off --mode metrics --jobs 20000

Each repetition empties the job table, enqueues ``--jobs`` no-op jobs with
``store.enqueue_jobs`` and drains them with one ``runjobs --burst`` process (the
bench's tuned arguments), in each mode in turn:

- ``off``: no observability flag (the default);
- ``metrics``: ``--metrics-port 127.0.0.1:0`` (needs the ``metrics`` extra).

Reported per mode, as medians over ``--reps``: jobs/s of the drain and the
worker process's CPU time per job in µs (its user + system time, from
``getrusage`` of the finished child: steadier than the rate on a shared
machine). Both net of a run of the same command on an empty queue (start-up,
registration, shutdown). The database named in ``--db`` is migrated and emptied: use one of
its own.
"""

from __future__ import annotations

import argparse
import statistics

from bench import burst

MODES = {"off": [], "metrics": ["--metrics-port", "127.0.0.1:0"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True, help="database URL (emptied!)")
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--mode", choices=sorted(MODES), action="append")
    args = parser.parse_args()
    env = burst.setup(args.db)
    results: dict[str, list[tuple[float, float]]] = {}
    for _rep in range(args.reps):
        for mode in args.mode or ["off", "metrics"]:
            rate, _wall, cpu = burst.net_drain(env, MODES[mode], args.jobs)
            results.setdefault(mode, []).append((rate, cpu * 1e6))
    for mode, samples in results.items():
        rate = statistics.median(s[0] for s in samples)
        cpu_us = statistics.median(s[1] for s in samples)
        runs = ", ".join(f"{s[0]:.0f}/s {s[1]:.0f}µs" for s in samples)
        print(f"{mode:8} {rate:8.0f} jobs/s  {cpu_us:6.0f} µs CPU/job   ({runs})")


if __name__ == "__main__":
    main()
