"""Benchmark dispatch_jobs side by side with django-tasks-db, Procrastinate and
PgQueuer, on the same machine, in the same run.

    bench/run.sh [--quick] [--systems a,b] [--scenarios x,y] [--reps N]

Each system gets its own virtual environment (``bench/.venvs/``, built on first
use) and its own fresh database; systems run one at a time; each scenario is
repeated (3 times in full mode) and the median is reported. At the end a table
compares every peer with dispatch_jobs and the JSON lands in ``bench/results/``.

Standard library only: this process never imports any system under test.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make ``bench`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import envs, report  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
# The longest one drain may run; a slower system is measured over what it
# completed by then (its result says "complete": 0).
QUICK_CAP_S = 5
FULL_CAP_S = 12
OTHER_VENDOR_MAX = 10_000


@dataclass(frozen=True)
class Step:
    """One scenario, with its size per mode (``quick``, ``full``) and per system."""

    scenario: str
    full: int
    quick: int
    systems: tuple[str, ...] = report.SYSTEMS
    vendors: tuple[str, ...] = ("postgres",)
    # Per-system sizes where a peer is far slower: enough jobs that its drain
    # lasts several seconds without the run taking an hour.
    full_by_system: dict[str, int] = field(default_factory=dict)
    quick_by_system: dict[str, int] = field(default_factory=dict)
    batch: int = 1000
    rows: int = 0
    quick_rows: int = 0
    quick_mode: bool = True  # part of --quick?
    quick_vendors: tuple[str, ...] = ("postgres",)
    reps_quick: int = 1
    reps_full: int = 3

    def size(self, system: str, quick: bool, vendor: str = "postgres") -> int:
        if quick:
            return self.quick_by_system.get(system, self.quick)
        size = self.full_by_system.get(system, self.full)
        # SQLite and MariaDB rows are dispatch_jobs alone: smaller, same shape.
        return size if vendor == "postgres" else min(size, OTHER_VENDOR_MAX)


SLOW_DRAIN_FULL = {"django_tasks_db": 2_000, "procrastinate": 5_000}
SLOW_DRAIN_QUICK = {"django_tasks_db": 200, "procrastinate": 500}
CORE_VENDORS = ("postgres", "sqlite", "mysql")

PLAN = (
    Step(
        "enqueue_single",
        2_000,
        300,
        vendors=CORE_VENDORS,
        quick_vendors=CORE_VENDORS,
        full_by_system={"django_tasks_db": 1_000},
    ),
    Step("enqueue_bulk", 20_000, 5_000, vendors=CORE_VENDORS, batch=10_000),
    Step(
        "drain_default",
        50_000,
        5_000,
        vendors=CORE_VENDORS,
        quick_vendors=CORE_VENDORS,
        full_by_system=SLOW_DRAIN_FULL,
        quick_by_system=SLOW_DRAIN_QUICK,
    ),
    Step(
        "drain_tuned",
        50_000,
        5_000,
        full_by_system=SLOW_DRAIN_FULL,
        quick_by_system=SLOW_DRAIN_QUICK,
    ),
    Step(
        "drain_2proc",
        50_000,
        5_000,
        full_by_system=SLOW_DRAIN_FULL,
        quick_by_system=SLOW_DRAIN_QUICK,
        quick_mode=False,
    ),
    Step("latency_notify", 20, 5),
    Step("latency_poll", 8, 3, quick_mode=False, reps_full=1),
    Step(
        "memory_c32",
        2_000,
        300,
        full_by_system={"django_tasks_db": 300},
        quick_by_system={"django_tasks_db": 100},
    ),
    Step("claim_empty", 20_000, 2_000, systems=("dispatch_jobs",), vendors=CORE_VENDORS),
    Step("raw_ceiling", 50_000, 10_000, systems=("dispatch_jobs",)),
    Step("claim_1m", 20_000, 2_000, systems=("dispatch_jobs",), rows=1_000_000, quick_rows=50_000),
)


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    python = args.python or sys.executable
    mode = "quick" if args.quick else "full"
    started = time.monotonic()
    # The scenario subprocesses read it (bench.databases.FILL_ANALYZE).
    os.environ["BENCH_FILL_ANALYZE"] = "1" if args.analyze else "0"
    print(
        f"dispatch_jobs bench ({mode} mode) on {os.cpu_count()} cores; drains start "
        + ("after ANALYZE" if args.analyze else "on tables without planner statistics"),
        flush=True,
    )

    systems = [s for s in report.SYSTEMS if s in args.systems]
    for system in systems:
        envs.ensure(system, python, RESULTS / "logs" / f"install-{system}.log")

    results = report.Results()
    meta: dict[str, dict[str, object]] = {}
    if args.merge:
        # Re-measure some cells of an earlier run, keep the rest.
        earlier = json.loads(Path(args.merge).read_text())
        for cell in earlier.get("results", []):
            key = (cell.pop("vendor"), cell.pop("scenario"), cell.pop("system"))
            results.add(*key, cell)
        meta.update(earlier.get("systems", {}))
    machine = _machine()
    for system in systems:  # one system at a time, every scenario
        print(f"\n== {report.LABELS[system]}", flush=True)
        for step in PLAN:
            if step.scenario not in args.scenarios or system not in step.systems:
                continue
            if args.quick and not step.quick_mode:
                continue
            for vendor in step.quick_vendors if args.quick else step.vendors:
                if vendor not in args.vendors or (
                    vendor != "postgres" and system != "dispatch_jobs"
                ):
                    continue
                began = time.monotonic()
                cell = _run_step(system, vendor, step, args)
                cell["elapsed_s"] = round(time.monotonic() - began, 1)
                cell["fill_analyze"] = args.analyze  # per cell: --merge keeps older ones
                results.add(vendor, step.scenario, system, cell)
                meta.setdefault(system, {}).update(
                    {k: cell[k] for k in ("versions", "notes", "modes") if k in cell}
                )
                print("  " + _summary(vendor, step.scenario, cell), flush=True)
    if systems:
        machine["servers"] = _servers(systems[0])
    profile = _profile(args) if "dispatch_jobs" in systems and args.profile else None

    checks = report.targets(results)
    elapsed = time.monotonic() - started
    peer = report.peer_table(results)
    own = report.own_table(results)
    goals = report.targets_table(checks)
    print(
        f"\nMedians of {_reps_text(args)}; (Nx) = how many times better dispatch_jobs is "
        "than that peer (>1: dispatch_jobs leads).\n"
    )
    print(peer, own, goals, sep="\n\n")
    if profile:
        print("\n" + _profile_text(profile))
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    payload = {
        "mode": mode,
        "reps": _reps_text(args),
        "finished_at": stamp,
        "elapsed_s": round(elapsed, 1),
        "machine": machine,
        "fill_analyze": args.analyze,
        "systems": meta,
        "results": results.as_json(),
        "targets": checks,
        "profile": profile,
        "tables": {"peers": peer, "dispatch_jobs": own, "targets": goals},
    }
    out = RESULTS / f"bench-{mode}-{stamp}.json"
    report.write(out, payload)
    report.write(RESULTS / f"latest-{mode}.json", payload)
    print(f"\nwrote {out.relative_to(ROOT)} ({elapsed:.0f} s)")
    return 0


def _run_step(system: str, vendor: str, step: Step, args: argparse.Namespace) -> dict[str, object]:
    reps = args.reps or (step.reps_quick if args.quick else step.reps_full)
    rows = step.quick_rows if args.quick else step.rows
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tmp:
        out = Path(tmp.name)
    argv = [
        str(envs.python_of(system)),
        "-m",
        "bench.driver",
        "--system",
        system,
        "--vendor",
        vendor,
        "--scenario",
        step.scenario,
        "--reps",
        str(reps),
        "--size",
        str(step.size(system, args.quick, vendor)),
        "--batch",
        str(step.batch),
        "--rows",
        str(rows),
        "--out",
        str(out),
        "--cap",
        str(QUICK_CAP_S if args.quick else FULL_CAP_S),
    ]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    log = RESULTS / "logs" / f"driver-{system}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    try:
        with open(log, "ab") as sink:
            subprocess.run(argv, cwd=ROOT, env=env, stdout=sink, stderr=sink, timeout=args.timeout)
        cell: dict[str, object] = json.loads(out.read_text() or "{}")
    except subprocess.TimeoutExpired:
        cell = {"error": f"timed out after {args.timeout} s"}
    except (OSError, json.JSONDecodeError) as exc:
        cell = {"error": f"driver wrote no result ({exc}); see {log}"}
    finally:
        out.unlink(missing_ok=True)
    cell["size"] = step.size(system, args.quick, vendor)
    return cell


def _profile(args: argparse.Namespace) -> dict[str, object] | None:
    """py-spy on one runjobs process draining at the tuned settings."""
    print("\n== profiling dispatch_jobs runjobs (tuned drain) with py-spy", flush=True)
    step = Step("profile_tuned", 50_000, 5_000)
    cell = _run_step("dispatch_jobs", "postgres", step, args)
    if "profile" not in cell:
        print("  " + _summary("postgres", step.scenario, cell))
        return None
    return cell["profile"]  # type: ignore[return-value]


def _profile_text(profile: dict[str, object]) -> str:
    lines = [
        f"runjobs profile: {profile['samples']} samples while {profile['completed']} jobs "
        "completed; % of samples with the function on the stack (dispatch_jobs' own) / on top:"
    ]
    for name, share in profile["top_dispatch_jobs"][:12]:  # type: ignore[index]
        lines.append(f"  {share:5.1f}%  {name}")
    lines.append("  -- on top of the stack (where the time is spent):")
    for name, share in profile["top_exclusive"][:8]:  # type: ignore[index]
        lines.append(f"  {share:5.1f}%  {name}")
    return "\n".join(lines)


def _summary(vendor: str, scenario: str, cell: dict[str, object]) -> str:
    head = f"{scenario:<15} {vendor:<8} {cell.get('elapsed_s', 0):>5.0f}s"
    if "unsupported" in cell:
        return f"{head} n/a: {cell['unsupported']}"
    if "error" in cell:
        return f"{head} ERROR: {str(cell['error']).strip().splitlines()[-1][:160]}"
    med = report.medians(cell.get("runs") or [])  # type: ignore[arg-type]
    shown = ", ".join(f"{k}={v:,.1f}" for k, v in sorted(med.items()))
    return f"{head} n={cell['size']:<7} {shown}"


def _machine() -> dict[str, object]:
    mem_kib = 0
    try:
        with open("/proc/meminfo") as meminfo:
            mem_kib = int(meminfo.readline().split()[1])
    except OSError:
        pass
    cpu = ""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            cpu = next(
                (ln.split(":", 1)[1].strip() for ln in cpuinfo if ln.startswith("model name")), ""
            )
    except OSError:
        pass
    return {
        "nproc": os.cpu_count(),
        "memory_gib": round(mem_kib / 2**20, 1),
        "cpu": cpu,
        "kernel": platform.release(),
        "loadavg_at_start": os.getloadavg(),
    }


def _servers(system: str) -> object:
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tmp:
        out = Path(tmp.name)
    subprocess.run(
        [
            str(envs.python_of(system)),
            "-m",
            "bench.driver",
            "--system",
            system,
            "--scenario",
            "machine",
            "--size",
            "0",
            "--out",
            str(out),
        ],
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        capture_output=True,
    )
    try:
        return json.loads(out.read_text()).get("servers", {})
    except (OSError, json.JSONDecodeError):
        return {}
    finally:
        out.unlink(missing_ok=True)


def _reps_text(args: argparse.Namespace) -> str:
    if args.reps:
        return f"{args.reps} repetition(s)"
    return "1 repetition (quick mode)" if args.quick else "3 repetitions"


def _parse(argv: list[str] | None) -> argparse.Namespace:
    scenarios = [step.scenario for step in PLAN]
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="small sizes, 1 repetition (< 3 min)")
    parser.add_argument("--systems", default=",".join(report.SYSTEMS), help="comma-separated")
    parser.add_argument("--scenarios", default=",".join(scenarios), help="comma-separated")
    parser.add_argument("--vendors", default=",".join(CORE_VENDORS), help="for dispatch_jobs")
    parser.add_argument("--reps", type=int, default=0, help="override repetitions")
    parser.add_argument("--timeout", type=int, default=1200, help="seconds per scenario")
    parser.add_argument("--python", default="", help="Python >= 3.12 to build venvs with")
    parser.add_argument(
        "--merge", default="", help="an earlier results JSON whose other cells to keep"
    )
    parser.add_argument(
        "--analyze",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="ANALYZE after each drain's fill, as a live server's autovacuum would "
        "(default); --no-analyze drains tables without planner statistics",
    )
    parser.add_argument(
        "--profile",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="py-spy profile of runjobs at the end (default: on in full mode)",
    )
    args = parser.parse_args(argv)
    args.systems = _choices(args.systems, report.SYSTEMS, "system")
    args.scenarios = _choices(args.scenarios, scenarios, "scenario")
    args.vendors = _choices(args.vendors, CORE_VENDORS, "vendor")
    if args.profile is None:
        args.profile = not args.quick
    return args


def _choices(text: str, allowed: tuple[str, ...] | list[str], what: str) -> list[str]:
    chosen = [x.strip() for x in text.split(",") if x.strip()]
    unknown = [x for x in chosen if x not in allowed]
    if unknown:
        sys.exit(f"unknown {what}(s): {', '.join(unknown)}; choose from {', '.join(allowed)}")
    return chosen


if __name__ == "__main__":
    sys.exit(main())
