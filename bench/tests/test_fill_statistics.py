"""Drains start from the same planner statistics whatever the system: after the
fill, ``bench.databases.analyze`` brings them up to date unless the run asks for
tables without them (``--no-analyze``)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from bench.databases import analyze
from bench.run import _parse


def test_analyze_writes_the_planners_statistics(tmp_path: Path) -> None:
    path = tmp_path / "bench.sqlite3"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE job (id INTEGER PRIMARY KEY, state TEXT)")
        conn.execute("CREATE INDEX job_state ON job (state)")
        conn.executemany("INSERT INTO job (state) VALUES (?)", [("pending",)] * 50)
    analyze(f"sqlite:///{path}")
    with sqlite3.connect(path) as conn:
        stats = conn.execute("SELECT tbl, idx, stat FROM sqlite_stat1").fetchall()
    assert ("job", "job_state", "50 50") in stats


def test_drains_start_after_analyze_unless_asked_not_to() -> None:
    assert _parse([]).analyze is True
    assert _parse(["--no-analyze"]).analyze is False
