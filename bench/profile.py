"""Where a draining worker spends its time: py-spy attached to a real worker.

    python -m bench.driver --system dispatch_jobs --scenario profile --size 20000 ...

Fills the queue, starts the worker in ``mode``, attaches ``py-spy record``
(sampling every thread that is not idle) for the drain, and sums the collapsed
stacks into the functions with the most samples, inclusive and exclusive.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

from .measure import BenchError
from .processes import LOG_DIR, wait_until
from .systems.base import System

TOP = 15


def profile_drain(system: System, jobs: int, mode: str, seconds: float) -> dict[str, object]:
    """Profile one worker draining ``jobs`` no-op jobs for up to ``seconds``."""
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(py_spy).exists():
        raise BenchError("py-spy is not installed in this venv")
    system.prepare()
    system.filled(jobs)
    worker = system.start_worker(mode, f"profile-{mode}")
    raw = LOG_DIR / f"profile-{system.name}-{mode}.txt"
    raw.unlink(missing_ok=True)
    try:
        # Attach once the first job completed: start-up is not the hot path.
        wait_until(lambda: system.finished() > 0 or not worker.alive(), timeout=60)
        spy = subprocess.run(
            [
                py_spy,
                "record",
                "--pid",
                str(worker.pid),
                "--duration",
                str(int(seconds)),
                "--rate",
                "200",
                "--format",
                "raw",
                "--output",
                str(raw),
                "--nonblocking",
                # BENCH_PROFILE_GIL=1: only samples that hold the GIL (where one
                # process's Python is the limit), not every busy thread.
                *(["--gil"] if os.environ.get("BENCH_PROFILE_GIL") else []),
            ],
            capture_output=True,
            text=True,
            timeout=seconds + 60,
        )
        wait_until(lambda: not worker.alive() or system.finished() >= jobs, timeout=5)
    finally:
        worker.stop()
    if not raw.exists():
        raise BenchError(f"py-spy wrote nothing: {spy.stderr.strip()[-400:]}")
    inclusive, exclusive, own, total = summarise(raw.read_text())

    def top(counter: Counter[str]) -> list[tuple[str, float]]:
        return [(name, round(100 * n / total, 1)) for name, n in counter.most_common(TOP)]

    return {
        "samples": total,
        "completed": system.finished(),
        "raw": str(raw),
        "top_inclusive": top(inclusive),
        "top_exclusive": top(exclusive),
        "top_dispatch_jobs": top(own),
    }


def summarise(collapsed: str) -> tuple[Counter[str], Counter[str], Counter[str], int]:
    """Per function: samples with it anywhere on the stack (once per stack),
    samples with it on top, and the inclusive count of dispatch_jobs' own
    functions. Lines look like ``frame;frame;frame count``."""
    inclusive: Counter[str] = Counter()
    exclusive: Counter[str] = Counter()
    own: Counter[str] = Counter()
    total = 0
    for line in collapsed.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        raw_frames = stack.split(";")
        frames = [_short(frame) for frame in raw_frames]
        total += count
        for name in set(frames):
            inclusive[name] += count
        # py-spy prints paths relative to sys.path: "(dispatch_jobs/worker/...".
        for name in {_short(f) for f in raw_frames if "dispatch_jobs/" in f}:
            own[name] += count
        if frames:
            exclusive[frames[-1]] += count
    return inclusive, exclusive, own, max(total, 1)


def _short(frame: str) -> str:
    """``func (path/to/module.py:12)`` -> ``func (module.py)``: one entry per function."""
    name, _, where = frame.partition(" (")
    path = where.rstrip(")").rsplit(":", 1)[0]
    parts = Path(path).parts
    tail = "/".join(parts[-2:]) if parts else path
    return f"{name} ({tail})"
