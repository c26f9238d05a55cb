"""Query plans on every database the suite runs on: the plan of a captured
statement as text, and whether it reads the job table without an index.

- PostgreSQL: ``EXPLAIN`` with the sequential scan (and whatever else is named)
  priced out: if no index can serve the query the planner still shows one.
- SQLite: ``EXPLAIN QUERY PLAN``; a full read is ``SCAN <table>`` with no index.
- MariaDB/MySQL: ``EXPLAIN``; a full read is access type ``ALL``.
"""

from __future__ import annotations

import re

from django.db import connection

from dispatch_jobs.models import Job

TABLE = Job._meta.db_table


def explain(sql: str, *forbidden: str, as_planned: bool = False) -> str:
    """The plan of ``sql``, one line per plan row. On PostgreSQL the settings
    named in ``forbidden`` are turned off, and the sequential scan too unless
    ``as_planned`` (which wants the plan a deployment gets: pricing out the
    sequential scan of a small side table, say, prices every plan alike)."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            for setting in (*(() if as_planned else ("enable_seqscan",)), *forbidden):
                cursor.execute(f"SET LOCAL {setting} = off")
            cursor.execute("EXPLAIN " + sql)
            return "\n".join(row[0] for row in cursor.fetchall())
        if connection.vendor == "sqlite":
            cursor.execute("EXPLAIN QUERY PLAN " + sql)
            return "\n".join(str(row[-1]) for row in cursor.fetchall())
        cursor.execute("EXPLAIN " + sql)
        names = [column[0].lower() for column in cursor.description]
        return "\n".join(
            " ".join(f"{name}={value}" for name, value in zip(names, row, strict=True))
            for row in cursor.fetchall()
        )


def scans_the_table(plan: str) -> bool:
    """Whether ``plan`` reads the job table row by row, no index involved."""
    if connection.vendor == "postgresql":
        return f"Seq Scan on {TABLE}" in plan
    if connection.vendor == "sqlite":
        # The table is its rowid b-tree: "SCAN <table>" alone walks the primary
        # key (as PostgreSQL's backward primary-key scan does), which is the
        # keyset read of an id order; it is a full read when it must then sort.
        walks = re.search(rf"^SCAN {TABLE}$", plan, re.MULTILINE) is not None
        return walks and sorts(plan)
    return re.search(rf"\btable={TABLE}\b.*\btype=ALL\b", plan) is not None


def job_table_queries(captured: list[dict]) -> list[str]:
    """The captured statements that read the job table (by its quoted name)."""
    quoted = re.compile(rf"[\"`]{TABLE}[\"`]")
    return [q["sql"] for q in captured if quoted.search(q["sql"])]


def sorts(plan: str) -> bool:
    """Whether the plan sorts rows rather than reading them in an index's order."""
    if connection.vendor == "postgresql":
        return re.search(r"\bSort\b(?! Key)", plan) is not None
    if connection.vendor == "sqlite":
        return "TEMP B-TREE FOR" in plan
    return "Using filesort" in plan


def seeks(plan: str) -> bool:
    """Whether the plan seeks into an index by a condition (not a whole-index walk)."""
    if connection.vendor == "postgresql":
        return "Index Cond" in plan
    if connection.vendor == "sqlite":
        return re.search(rf"^SEARCH {TABLE} USING", plan, re.MULTILINE) is not None
    return (
        re.search(rf"\btable={TABLE}\b.*\btype=(ref|range|eq_ref|const|ref_or_null)\b", plan)
        is not None
    )


def indexes_used(plan: str) -> list[str]:
    """Every index of the job table the plan reads, in plan order (PostgreSQL):
    a list of jobs reads its live and its finished part each through its own."""
    found = re.findall(
        rf"Index (?:Only )?Scan(?: Backward)? using (\w+) on {TABLE}|Bitmap Index Scan on (\w+)",
        plan,
    )
    names = [scan or bitmap for scan, bitmap in found]
    return ["primary key" if name.endswith("_pkey") else name for name in names]


def sorted_scans(plan: str) -> list[str | None]:
    """For each Sort node of a PostgreSQL plan, the first index (or None) read
    beneath it: which part of a list is sorted rather than read in order."""
    lines = plan.splitlines()
    found: list[str | None] = []
    for at, line in enumerate(lines):
        if re.search(r"\bSort\b(?! Key)", line) is None:
            continue
        depth = len(line) - len(line.lstrip())
        beneath = []
        for below in lines[at + 1 :]:
            if below.strip() and len(below) - len(below.lstrip()) <= depth:
                break
            beneath.append(below)
        found.append(next(iter(indexes_used("\n".join(beneath))), None))
    return found


def index_used(plan: str) -> str | None:
    """The first index of the job table the plan reads (primary key included)."""
    if connection.vendor == "postgresql":
        found = re.search(rf"Index (?:Only )?Scan(?: Backward)? using (\w+) on {TABLE}", plan)
        found = found or re.search(r"Bitmap Index Scan on (\w+)", plan)
    elif connection.vendor == "sqlite":
        if re.search(rf"^SCAN {TABLE}$", plan, re.MULTILINE):
            return "primary key"
        found = re.search(
            rf"(?:SCAN|SEARCH) {TABLE} USING (?:COVERING )?(INDEX \w+|INTEGER PRIMARY KEY)", plan
        )
    else:
        found = re.search(rf"\btable={TABLE}\b.*?\bkey=(\w+)", plan)
    if found is None:
        return None
    name = found.group(1).removeprefix("INDEX ")
    return (
        "primary key"
        if name in ("INTEGER PRIMARY KEY", "PRIMARY") or name.endswith("_pkey")
        else name
    )
