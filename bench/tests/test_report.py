"""The bench's own arithmetic: medians, ratios, targets, sizes, profile parsing.

Run with ``.venv/bin/python -m pytest bench/tests``. Nothing here measures or
asserts a wall time: these are pure functions over made-up numbers.
"""

from __future__ import annotations

from bench import report
from bench.profile import summarise
from bench.run import OTHER_VENDOR_MAX, Step


def test_medians_ignore_nan_and_take_the_middle() -> None:
    runs = [{"rate": 10.0, "p": float("nan")}, {"rate": 30.0}, {"rate": 20.0}]
    assert report.medians(runs) == {"rate": 20.0}


def _results(values: dict[tuple[str, str], float]) -> report.Results:
    results = report.Results()
    for (scenario, system), value in values.items():
        metric = "p50_ms" if scenario.startswith("latency") else "rate"
        results.add("postgres", scenario, system, {"runs": [{metric: value}]})
    return results


def test_ratio_is_how_many_times_dispatch_jobs_leads_in_both_directions() -> None:
    faster = report.Row("drain", "drain_default", "rate", "jobs/s")
    lower = report.Row("latency", "latency_notify", "p50_ms", "ms", higher_is_better=False)
    assert report.ratio(faster, 200.0, 100.0) == " (2.00x)"
    assert report.ratio(lower, 5.0, 20.0) == " (4.00x)"
    assert report.ratio(lower, 20.0, 5.0) == " (0.25x)"
    assert report.ratio(faster, None, 100.0) == ""


def test_peer_table_marks_unsupported_cells() -> None:
    results = _results({("enqueue_bulk", "dispatch_jobs"): 1000.0})
    results.add("postgres", "enqueue_bulk", "django_tasks_db", {"unsupported": "no bulk"})
    table = report.peer_table(results)
    bulk = next(line for line in table.splitlines() if "enqueue, bulk" in line)
    assert "1,000" in bulk and "n/a" in bulk


def test_targets_compare_against_issue_thresholds() -> None:
    results = _results(
        {
            ("drain_default", "dispatch_jobs"): 25_000.0,
            ("drain_tuned", "pgqueuer"): 10_000.0,
            ("latency_notify", "dispatch_jobs"): 30.0,
            ("claim_empty", "dispatch_jobs"): 1000.0,
            ("claim_1m", "dispatch_jobs"): 950.0,
        }
    )
    met = {check["target"]: check["met"] for check in report.targets(results)}
    assert met["drain, one runjobs process >= 20,000 jobs/s"] is True
    assert met["drain >= 2x PgQueuer's best in this run"] is True
    assert met["idle enqueue-to-start p50 with NOTIFY <= 20 ms"] is False
    assert met["claim rate at 1M finished rows >= 90% of empty"] is True
    assert met["bulk enqueue >= 80,000 jobs/s"] is None  # not measured


def test_step_sizes_per_mode_system_and_vendor() -> None:
    step = Step("drain_default", 50_000, 5_000, full_by_system={"procrastinate": 5_000})
    assert step.size("dispatch_jobs", quick=False) == 50_000
    assert step.size("procrastinate", quick=False) == 5_000
    assert step.size("dispatch_jobs", quick=True) == 5_000
    assert step.size("dispatch_jobs", quick=False, vendor="sqlite") == OTHER_VENDOR_MAX


def test_profile_summary_counts_inclusive_once_per_stack() -> None:
    collapsed = "\n".join(
        [
            "main (dispatch_jobs/worker/pool.py:1);f (x/y.py:2);f (x/y.py:3) 3",
            "main (dispatch_jobs/worker/pool.py:1);wait (psycopg/connection.py:9) 1",
            "garbage line",
        ]
    )
    inclusive, exclusive, own, total = summarise(collapsed)
    assert total == 4
    assert inclusive["f (x/y.py)"] == 3  # recursive frames count once
    assert exclusive["wait (psycopg/connection.py)"] == 1
    assert own == {"main (worker/pool.py)": 4}
