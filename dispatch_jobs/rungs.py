"""Execution rungs: how isolated a handler runs, from least to most.

A task's ``execution`` is the *least* isolation its handler needs (the seed's
``Options.Execution``); a worker runs every job it claims at its own rung
(``runjobs --execution``, ``DISPATCH_JOBS['WORKER_EXECUTION']``) and so claims
only the jobs that need that rung or less:

- ``in-process``: the handler runs on one of the worker's threads. Cheapest;
  a timeout or a cancel is cooperative, and a crash takes the worker down.
- ``subprocess``: the handler runs in a child process the worker supervises
  (``worker.children``): its timeout and a cancel kill the child, a memory
  limit is enforced, its death fails that job alone, and its CPU time, peak
  RSS and disk writes are measured.
"""

from __future__ import annotations

IN_PROCESS = "in-process"
SUBPROCESS = "subprocess"
# Least isolated first: a worker at a rung provides that rung and every one before.
RUNGS = (IN_PROCESS, SUBPROCESS)
# Rows written before the column was always set read as the default rung.
_LEGACY = ("",)


def is_rung(value: object) -> bool:
    return isinstance(value, str) and value in RUNGS


def provided_by(rung: str) -> tuple[str, ...]:
    """The ``Job.execution`` values a worker at ``rung`` may claim: that rung, and
    every less isolated one (a job needs *at least* its rung)."""
    provided = RUNGS[: RUNGS.index(rung) + 1]
    return (*provided, *_LEGACY) if IN_PROCESS in provided else provided


def describe(rung: str) -> str:
    """``"subprocess (runs in-process and subprocess jobs)"``, for the start-up line."""
    return f"{rung} (runs {' and '.join(RUNGS[: RUNGS.index(rung) + 1])} jobs)"
