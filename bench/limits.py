"""What the queue limits cost an unlimited queue's claim, run by hand:

    .venv/bin/python -m bench.limits --db postgres://postgres@127.0.0.1:5432/bench_limits
    .venv/bin/python -m bench.limits --db mysql://root@127.0.0.1:3306/bench_limits
    .venv/bin/python -m bench.limits --db sqlite:////tmp/bench_limits/limits.sqlite3

Claims ``--claim-jobs`` fresh pending jobs of queue ``default`` (``--claim-batch``
per claim, with a lease, as ``bench.hotpath``'s claim does) in four modes, one
repetition of each in turn, starting with another mode each time (so drift on a
shared machine spreads over all), and
prints the medians and each mode's rate and CPU per job as a share of the
baseline's (the CPU of this process is the steadier of the two on a shared
machine, where the rate swings with the neighbours' load):

- ``baseline``: the claim as it was before limits existed: one statement that
  skips paused queues only, no look at the list of limited queues;
- ``no limits set``: the claim with the limits machinery, no queue limited;
- ``others limited``: ``default`` unlimited while ``--limited`` other queues have
  a concurrency, per-org and rate limit (the statement then skips them);
- ``default limited``: ``default`` itself limited (max_running far above what
  it holds): the cost of the limited claim, for information.

The baseline is the same process with the limits' two hooks bypassed (the list
lookup and the statement's extra skip), so both sides share everything else. The
database named in ``--db`` is migrated and emptied: use a database of its own.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta

from bench.hotpath import Timing, _empty, claim, setup

MODES = ("baseline", "no limits set", "others limited", "default limited")


@contextmanager
def mode(name: str, limited: int) -> Iterator[None]:
    """Set the database and the claim path up for one mode; undo it after."""
    from django.db.models import Q

    from dispatch_jobs import store
    from dispatch_jobs.queue_limits import QueueLimits
    from dispatch_jobs.store import claim as claim_module
    from dispatch_jobs.store import db, selection

    real_claim, real_limited = claim_module._claim, selection.LIMITED
    others = [f"other-{i}" for i in range(limited)]
    capped = QueueLimits(
        max_running=1_000_000,
        max_running_per_org=1_000_000,
        rate_limit=1_000_000,
        rate_period=timedelta(seconds=1),
    )
    if name == "baseline":
        # The pre-limits claim: the engine's statement straight away, which
        # skips paused queues only (an always-false Q drops out of the OR).
        claim_module._claim = lambda opts: db.engine().claim(opts)  # type: ignore[assignment]
        selection.LIMITED = Q(pk__in=[])
    elif name == "others limited":
        for queue in others:
            store.set_queue_limits(queue, capped)
    elif name == "default limited":
        store.set_queue_limits("default", QueueLimits(max_running=1_000_000))
    _forget_statements()
    try:
        yield
    finally:
        claim_module._claim, selection.LIMITED = real_claim, real_limited
        for queue in [*others, "default"]:
            store.set_queue_limits(queue, QueueLimits())
        _forget_statements()


def _forget_statements() -> None:
    """The engines keep compiled claim statements; a mode changes their text."""
    from dispatch_jobs.store import db

    claims = getattr(db.engine(), "claims", None)
    if claims is not None:
        claims.statements.clear()


def run(modes: tuple[str, ...], reps: int, jobs: int, batch: int, limited: int) -> None:
    timings: dict[str, list[Timing]] = {name: [] for name in modes}
    for rep in range(reps):
        # Each repetition starts with another mode: no mode always runs first.
        for name in modes[rep % len(modes) :] + modes[: rep % len(modes)]:
            with mode(name, limited):
                timings[name].append(claim(jobs, batch))
        print(f"repetition {rep + 1}/{reps} done", flush=True)
    base = statistics.median(t.rate for t in timings[modes[0]])
    base_cpu = statistics.median(t.cpu_per_job for t in timings[modes[0]])
    for name in modes:
        rate = statistics.median(t.rate for t in timings[name])
        cpu = statistics.median(t.cpu_per_job for t in timings[name])
        shown = ", ".join(f"{t.rate:,.0f}" for t in timings[name])
        print(
            f"{name:<16} median {rate:>9,.0f} jobs/s ({rate / base:>6.1%} of baseline) "
            f"{cpu:>7,.1f} µs CPU/job ({cpu / base_cpu:>6.1%})   runs: {shown}"
        )


def main(argv: list[str] | None = None, out: Callable[[str], None] = print) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", required=True, help="database URL (emptied!)")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--claim-jobs", type=int, default=10_000)
    parser.add_argument("--claim-batch", type=int, default=10)
    parser.add_argument("--limited", type=int, default=5, help="other queues with limits")
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated, baseline first")
    args = parser.parse_args(argv)
    modes = tuple(m.strip() for m in args.modes.split(","))
    unknown = set(modes) - set(MODES)
    if unknown or modes[0] != "baseline":
        parser.error(f"--modes: among {', '.join(MODES)}, baseline first")
    setup(args.db)
    from django.db import connection

    out(
        f"database: {connection.vendor}; {args.claim_jobs:,} jobs per run, "
        f"{args.claim_batch} per claim, {args.reps} repetitions"
    )
    _empty()
    run(modes, args.reps, args.claim_jobs, args.claim_batch, args.limited)
    _empty()


if __name__ == "__main__":
    main()
