"""Medians, the side-by-side table, the issue-6 targets, and the JSON file.

Standard library only: the orchestrator runs outside every system's venv.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

SYSTEMS = ("dispatch_jobs", "django_tasks_db", "procrastinate", "pgqueuer")
LABELS = {
    "dispatch_jobs": "dispatch_jobs",
    "django_tasks_db": "django-tasks-db",
    "procrastinate": "Procrastinate",
    "pgqueuer": "PgQueuer",
}


@dataclass(frozen=True)
class Row:
    """One line of a table: a metric of a scenario on a vendor."""

    label: str
    scenario: str
    metric: str
    unit: str
    higher_is_better: bool = True
    vendor: str = "postgres"


PEER_ROWS = (
    Row("enqueue, one at a time", "enqueue_single", "rate", "jobs/s"),
    Row("enqueue, bulk", "enqueue_bulk", "rate", "jobs/s"),
    Row("drain, 1 process, defaults", "drain_default", "rate", "jobs/s"),
    Row("drain, 1 process, tuned", "drain_tuned", "rate", "jobs/s"),
    Row("drain, 2 processes, tuned", "drain_2proc", "rate", "jobs/s"),
    Row("idle latency p50, NOTIFY", "latency_notify", "p50_ms", "ms", False),
    Row("idle latency p95, NOTIFY", "latency_notify", "p95_ms", "ms", False),
    Row("idle latency p50, polling", "latency_poll", "p50_ms", "ms", False),
    Row("idle latency p95, polling", "latency_poll", "p95_ms", "ms", False),
    Row("worker peak RSS, concurrency 32", "memory_c32", "peak_rss_mib", "MiB", False),
)

OWN_ROWS = (
    Row("raw SQL ceiling: claim 100 + complete, 1 process", "raw_ceiling", "rate", "jobs/s"),
    Row("enqueue one at a time, store API", "enqueue_single", "rate_store", "jobs/s"),
    Row("enqueue bulk, store API", "enqueue_bulk", "rate_store", "jobs/s"),
    Row("claim rate, empty table", "claim_empty", "rate", "jobs/s"),
    Row("claim rate, 1M finished rows", "claim_1m", "rate", "jobs/s"),
    Row("admin job list at 1M rows", "claim_1m", "admin_list_ms", "ms", False),
    Row("admin job list statements (all)", "claim_1m", "admin_list_queries", "queries", False),
    Row("admin job list reads (SELECTs)", "claim_1m", "admin_list_reads", "queries", False),
    Row("admin list ?state=completed (1M match)", "claim_1m", "admin_completed_ms", "ms", False),
    Row("admin list ?state=failed (none match)", "claim_1m", "admin_failed_ms", "ms", False),
)

VENDOR_ROWS = tuple(
    Row(f"{label} [{vendor}]", scenario, metric, unit, vendor=vendor)
    for vendor in ("sqlite", "mysql")
    for label, scenario, metric, unit in (
        ("enqueue, one at a time", "enqueue_single", "rate", "jobs/s"),
        ("enqueue, bulk", "enqueue_bulk", "rate", "jobs/s"),
        ("drain, 1 process, defaults", "drain_default", "rate", "jobs/s"),
        ("claim rate, empty table", "claim_empty", "rate", "jobs/s"),
    )
)


def medians(runs: Iterable[dict[str, float]]) -> dict[str, float]:
    by_metric: dict[str, list[float]] = {}
    for run in runs:
        for key, value in run.items():
            if isinstance(value, int | float) and not math.isnan(value):
                by_metric.setdefault(key, []).append(float(value))
    return {key: statistics.median(values) for key, values in by_metric.items()}


class Results:
    """Every measured cell, keyed by (vendor, scenario, system)."""

    def __init__(self) -> None:
        self.cells: dict[tuple[str, str, str], dict[str, object]] = {}

    def add(self, vendor: str, scenario: str, system: str, cell: dict[str, object]) -> None:
        runs = cell.get("runs") or []
        cell["median"] = medians(runs)  # type: ignore[arg-type]
        self.cells[(vendor, scenario, system)] = cell

    def value(self, row: Row, system: str) -> float | None:
        cell = self.cells.get((row.vendor, row.scenario, system))
        if not cell:
            return None
        return cell["median"].get(row.metric)  # type: ignore[union-attr,no-any-return]

    def status(self, row: Row, system: str) -> str:
        cell = self.cells.get((row.vendor, row.scenario, system))
        if cell is None:
            return "-"
        if "unsupported" in cell:
            return "n/a"
        if "error" in cell:
            return "error"
        return "-"

    def as_json(self) -> list[dict[str, object]]:
        return [
            {"vendor": v, "scenario": s, "system": system, **cell}
            for (v, s, system), cell in sorted(self.cells.items())
        ]


def fmt(value: float | None, unit: str) -> str:
    if value is None:
        return ""
    if unit in ("ms",) and value < 100:
        return f"{value:.1f}"
    if unit == "MiB":
        return f"{value:.0f}"
    return f"{value:,.0f}"


def ratio(row: Row, own: float | None, peer: float | None) -> str:
    """How many times better dispatch_jobs is than the peer (>1: it leads)."""
    if not own or not peer:
        return ""
    times = own / peer if row.higher_is_better else peer / own
    return f" ({times:.2f}x)"


def peer_table(results: Results) -> str:
    header = ["scenario (PostgreSQL)", "unit", *[LABELS[s] for s in SYSTEMS]]
    lines = []
    for row in PEER_ROWS:
        own = results.value(row, "dispatch_jobs")
        cells = [row.label, row.unit, fmt(own, row.unit) or results.status(row, "dispatch_jobs")]
        for system in SYSTEMS[1:]:
            peer = results.value(row, system)
            cells.append(
                fmt(peer, row.unit) + ratio(row, own, peer)
                if peer is not None
                else results.status(row, system)
            )
        lines.append(cells)
    return _render(header, lines)


def own_table(results: Results) -> str:
    header = ["dispatch_jobs alone", "unit", "value"]
    lines = []
    for row in (*OWN_ROWS, *VENDOR_ROWS):
        value = results.value(row, "dispatch_jobs")
        lines.append(
            [row.label, row.unit, fmt(value, row.unit) or results.status(row, "dispatch_jobs")]
        )
    return _render(header, lines)


def targets(results: Results) -> list[dict[str, object]]:
    """Issue 6 point 4, checked against this run's medians."""

    def v(scenario: str, metric: str, system: str = "dispatch_jobs") -> float | None:
        return results.value(Row("", scenario, metric, ""), system)

    drains = [x for x in (v("drain_default", "rate"), v("drain_tuned", "rate")) if x]
    pgq = [
        x
        for x in (v("drain_default", "rate", "pgqueuer"), v("drain_tuned", "rate", "pgqueuer"))
        if x
    ]
    empty, big = v("claim_empty", "rate"), v("claim_1m", "rate")
    checks: list[tuple[str, float | None, float, bool]] = [
        (
            "drain, one runjobs process >= 20,000 jobs/s",
            max(drains) if drains else None,
            20_000,
            True,
        ),
        ("bulk enqueue >= 80,000 jobs/s", v("enqueue_bulk", "rate"), 80_000, True),
        ("single enqueue >= 3,500 jobs/s", v("enqueue_single", "rate"), 3_500, True),
        (
            "idle enqueue-to-start p50 with NOTIFY <= 20 ms",
            v("latency_notify", "p50_ms"),
            20,
            False,
        ),
        (
            "claim rate at 1M finished rows >= 90% of empty",
            (big / empty * 100) if big and empty else None,
            90,
            True,
        ),
    ]
    if pgq:
        checks.append(
            (
                "drain >= 2x PgQueuer's best in this run",
                max(drains) if drains else None,
                2 * max(pgq),
                True,
            )
        )
    out = []
    for label, value, target, higher in checks:
        met = None if value is None else (value >= target if higher else value <= target)
        out.append({"target": label, "measured": value, "threshold": target, "met": met})
    return out


def targets_table(checks: list[dict[str, object]]) -> str:
    lines = []
    for check in checks:
        value = check["measured"]
        shown = "not measured" if value is None else f"{value:,.1f}"  # type: ignore[str-format]
        met = {True: "met", False: "NOT met", None: "-"}[check["met"]]  # type: ignore[index]
        lines.append([str(check["target"]), shown, f"{check['threshold']:,.0f}", met])
    return _render(["issue 6 target", "measured", "threshold", ""], lines)


def _render(header: list[str], lines: list[list[str]]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *lines]) for i in range(len(header))]
    out = ["| " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)) + " |"]
    out.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for line in lines:
        out.append("| " + " | ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)) + " |")
    return "\n".join(out)


def write(path: Path, payload: dict[str, object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=1, sort_keys=True))
