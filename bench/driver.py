"""Run one scenario for one system, inside that system's virtual environment.

    python -m bench.driver --system pgqueuer --vendor postgres \
        --scenario drain_default --reps 3 --size 50000 --out result.json

Writes ``{"runs": [{metric: value}, ...], "notes": {...}}`` (or ``"error"`` /
``"unsupported"``) as JSON to ``--out``. Each repetition starts from a fresh
database, except the big-table scenarios, which build their table once.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import traceback
from collections.abc import Callable
from importlib import metadata

from .measure import BenchError, drain, latency, memory
from .systems import NAMES, load
from .systems.base import System, Unsupported

# Set from --cap: the longest a drain may run before it is measured as partial.
DRAIN_CAP_S = [180.0]
PACKAGES = ("dispatch-jobs", "django-tasks-db", "procrastinate", "pgqueuer", "django", "psycopg")


def _per_rep(measure: Callable[[System, int, int], dict[str, float]]):  # type: ignore[no-untyped-def]
    def run(system: System, reps: int, size: int, batch: int) -> list[dict[str, float]]:
        runs = []
        for _ in range(reps):
            system.prepare()
            runs.append(measure(system, size, batch))
        return runs

    return run


def _raw_ceiling(system: System, jobs: int) -> dict[str, float]:
    if not hasattr(system, "raw_ceiling"):
        raise Unsupported("the raw-SQL ceiling runs in dispatch_jobs' schema only")
    return system.raw_ceiling(jobs, 100)  # type: ignore[attr-defined,no-any-return]


def _claim_rate(system: System, reps: int, claims: int, rows: int) -> list[dict[str, float]]:
    if not hasattr(system, "claim_rate"):
        raise Unsupported("claim-rate scenarios are measured for dispatch_jobs only")
    return system.claim_rate(rows, claims, reps, 100)  # type: ignore[attr-defined,no-any-return]


SCENARIOS = {
    "enqueue_single": _per_rep(lambda s, n, b: s.enqueue_single(n)),
    "enqueue_bulk": _per_rep(lambda s, n, b: s.enqueue_bulk(n, b)),
    "drain_default": _per_rep(lambda s, n, b: drain(s, n, "default", 1, DRAIN_CAP_S[0])),
    "drain_tuned": _per_rep(lambda s, n, b: drain(s, n, "tuned", 1, DRAIN_CAP_S[0])),
    "drain_2proc": _per_rep(lambda s, n, b: drain(s, n, "tuned", 2, DRAIN_CAP_S[0])),
    "latency_notify": _per_rep(lambda s, n, b: latency(s, n, "serve")),
    # Polls are 1 s (django-tasks-db) to 5 s (Procrastinate; dispatch_jobs
    # backs off to 5 s): arrivals spread over 6 s cover a whole cycle.
    "latency_poll": _per_rep(lambda s, n, b: latency(s, n, "poll", max_gap=6.0)),
    "memory_c32": _per_rep(lambda s, n, b: memory(s, n, "c32")),
    "raw_ceiling": _per_rep(lambda s, n, b: _raw_ceiling(s, n)),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--system", choices=NAMES, required=True)
    parser.add_argument("--vendor", choices=("postgres", "mysql", "sqlite"), default="postgres")
    parser.add_argument("--scenario", required=True)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--size", type=int, required=True, help="jobs (or samples)")
    parser.add_argument("--batch", type=int, default=1000, help="bulk batch size")
    parser.add_argument("--rows", type=int, default=0, help="finished rows (claim_*)")
    parser.add_argument("--cap", type=float, default=180.0, help="longest drain, seconds")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    DRAIN_CAP_S[0] = args.cap

    result: dict[str, object] = {"versions": _versions(args.system)}
    system: System | None = None
    try:
        system = load(args.system, args.vendor)
        result["notes"] = system.notes()
        result["modes"] = system.modes
        if args.scenario == "machine":
            result["runs"] = []
            result["servers"] = _servers()
        elif args.scenario in ("profile_default", "profile_tuned"):
            from .profile import profile_drain

            mode = args.scenario.removeprefix("profile_")
            result["profile"] = profile_drain(system, args.size, mode, args.cap)
            result["runs"] = []
        elif args.scenario in ("claim_empty", "claim_1m"):
            result["runs"] = _claim_rate(system, args.reps, args.size, args.rows)
        else:
            result["runs"] = SCENARIOS[args.scenario](system, args.reps, args.size, args.batch)
    except Unsupported as exc:
        result["unsupported"] = str(exc)
    except BenchError as exc:
        result["error"] = str(exc)
    except Exception:  # noqa: BLE001 - report it; the orchestrator carries on
        result["error"] = traceback.format_exc()
    finally:
        if system is not None:
            system.close()
    with open(args.out, "w") as out:
        json.dump(result, out)
    return 0


def _servers() -> dict[str, str]:
    from .databases import server_version

    found = {}
    for vendor in ("postgres", "mysql", "sqlite"):
        try:
            found[vendor] = server_version(vendor)
        except Exception as exc:  # noqa: BLE001 - a server that is down is a fact to print
            found[vendor] = f"unavailable ({exc.__class__.__name__})"
    return found


def _versions(system: str) -> dict[str, str]:
    found = {"python": sys.version.split()[0]}
    # PYTHONPATH holds the repository, so dispatch-jobs' egg-info is visible
    # in every venv: report it only where it is the system under test.
    for package in PACKAGES:
        if package == "dispatch-jobs" and system != "dispatch_jobs":
            continue
        with contextlib.suppress(metadata.PackageNotFoundError):
            found[package] = metadata.version(package)
    return found


if __name__ == "__main__":
    sys.exit(main())
