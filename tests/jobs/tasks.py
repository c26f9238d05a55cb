"""Task functions the test-suite enqueues and runs."""

# --- The worker's suite (tests/worker/). Side effects that must be seen across
# processes go to files under a directory the test passes in.
import os as _os
import signal as _signal
import time as _time
from pathlib import Path as _Path

from dispatch_jobs.compat import task as _task
from dispatch_jobs.exceptions import Permanent as _Permanent
from dispatch_jobs.scope import current_scope as _current_scope


def _touch(directory: str, name: str, text: str = "") -> None:
    with open(_Path(directory) / name, "a") as handle:
        handle.write(text + "\n")


@_task
def add(a: int, b: int) -> int:
    return a + b


@_task
def raise_value_error(message: str = "boom") -> None:
    raise ValueError(message)


@_task
def raise_permanent(message: str = "gone") -> None:
    raise _Permanent(message)


@_task
def fail_times(directory: str, key: str, failures: int) -> str:
    """Fail ``failures`` times (counted in a file), then succeed."""
    counter = _Path(directory) / f"{key}.count"
    done = int(counter.read_text()) if counter.exists() else 0
    counter.write_text(str(done + 1))
    if done < failures:
        raise RuntimeError(f"failure {done + 1} of {failures}")
    return "ok"


@_task(takes_context=True)
def record_run(context, directory: str) -> int:
    """Append this job's id to ``directory/runs``: one line per execution, so a
    test counts how often each job really ran (O_APPEND lines do not interleave)."""
    _touch(directory, "runs", str(context.job_id))
    return context.job_id


@_task
def return_object() -> object:
    return object()


@_task
def report_scope() -> dict:
    current = _current_scope()
    return {"app": current.app_id, "org": current.org_id}


@_task
def report_context() -> dict:
    """What ``current_job()`` shows a handler that did not ask for a context."""
    from dispatch_jobs.worker import current_job

    context = current_job()
    assert context is not None and context is current_job()  # built once
    result = context.task_result
    return {"job_id": context.job_id, "id": result.id, "status": result.status}


@_task(takes_context=True)
def nap(context, seconds: float, directory: str = "") -> str:
    """Sleep cooperatively; record the start, and the cancellation if observed."""
    if directory:
        _touch(directory, f"start-{context.job_id}")
    try:
        context.sleep(seconds)
    except Exception as exc:
        if directory:
            _touch(directory, f"cancelled-{context.job_id}", type(exc).__name__)
        raise
    return "rested"


@_task
def busy_sleep(seconds: float) -> str:
    """Ignore cancellation entirely (what in-process execution cannot stop)."""
    _time.sleep(seconds)
    return "done"


@_task
def kill_own_process() -> None:
    """The poison job: takes its whole worker down, every time."""
    _os.kill(_os.getpid(), _signal.SIGKILL)


# --- The tasks backend's suite (tests/backend/): options, aliases, results.
from datetime import timedelta as _timedelta  # noqa: E402

from dispatch_jobs import task as _dj_task  # noqa: E402


@_dj_task(name="greet-v1")
def greet(name: str, punctuation: str = "!") -> str:
    """Has a stable alias: rows store "greet-v1", not the import path."""
    return f"Hello, {name}{punctuation}"


@_dj_task(
    max_retries=5,
    timeout=_timedelta(seconds=30),
    lease_ttl=_timedelta(seconds=20),
    resources={"cpu": "500m", "memory": "2Gi", "fpga": 1},
    resource_limits={"cpu": 1},
    resource_class="highmem",
    retry_backoff_base=2,
    retry_backoff_cap=60,
    permanent_exceptions=(KeyError,),
)
def sized(n: int) -> int:
    """Declares every option."""
    return n


def _rows_resources(rows: int) -> dict[str, str]:
    return {"memory": f"{rows}Mi"}


@_dj_task(resources={"memory": "64Mi", "cpu": "250m"}, resource_func=_rows_resources)
def import_rows(rows: int) -> int:
    """Its memory requirement scales with its input (1 MiB per row, floor 64 MiB)."""
    return rows


@_dj_task(takes_context=True)
def attempt_number(context, label: str = "") -> int:
    return context.attempt


@_dj_task
async def async_add(a: int, b: int) -> int:
    return a + b


@_dj_task(queue_name="emails", priority=10)
def send_email(to: str) -> str:
    return f"sent to {to}"


@_dj_task(permanent_exceptions=(KeyError,))
def lookup(key: str) -> None:
    """KeyError is declared permanent: the job fails at once, with no retry."""
    raise KeyError(key)


@_dj_task(max_retries=0)
def fail_for_good(message: str = "no retries") -> None:
    raise ValueError(message)


@_task(takes_context=True)
def hold(context, directory: str) -> str:
    """Record the start, then wait (cooperatively) until ``directory/release``
    exists; record a cancellation if one is observed."""
    _touch(directory, f"start-{context.job_id}")
    release = _Path(directory) / "release"
    try:
        while not release.exists():
            context.sleep(0.05)
    except Exception as exc:
        _touch(directory, f"cancelled-{context.job_id}", type(exc).__name__)
        raise
    _touch(directory, f"done-{context.job_id}")
    return "released"


@_dj_task(
    max_retries=3,
    retry_backoff_base=_timedelta(milliseconds=200),
    retry_backoff_cap=_timedelta(milliseconds=400),
)
def flaky(directory: str, key: str, failures: int) -> str:
    """``fail_times`` with a fast, per-task backoff (base 200 ms, cap 400 ms)."""
    return fail_times.call(directory, key, failures)


@_dj_task(retry_backoff_base=_timedelta(hours=1), retry_backoff_cap=_timedelta(hours=1))
def fail_then_wait(message: str = "later") -> None:
    """Raises ValueError, and its retry waits a draw from up to an hour (full jitter):
    a ``--burst`` is over long before it is ready again (the default backoff, a draw
    from up to 1 s, could run it a second time within the burst)."""
    raise ValueError(message)


# --- Failure isolation (tests/worker/test_isolation.py): jobs whose fault must
# stay theirs. Runs are recorded as lines in files, to count them across processes.


@_task
def ordinary(directory: str, key: str, seconds: float = 0.0) -> str:
    """An innocent job: records each start and each successful end."""
    _touch(directory, f"start-{key}")
    if seconds:
        _time.sleep(seconds)
    _touch(directory, f"done-{key}")
    return key


UNSTORABLE = {
    "nan": float("nan"),
    "inf": [1.0, float("inf")],
    "nul": {"text": "a\x00b"},
    "surrogate": "\ud800",
    "deep": None,  # built on demand: a list nested 10,000 deep
}


def _unstorable(kind: str) -> object:
    if kind == "deep":
        value: list = []
        for _ in range(10_000):
            value = [value]
        return value
    return UNSTORABLE[kind]


@_task
def return_unstorable(directory: str, kind: str) -> object:
    _touch(directory, f"start-{kind}")
    return _unstorable(kind)


@_dj_task(max_retries=0)
def raise_unstorable(directory: str, kind: str) -> None:
    """Raises with a message no database can store as it is."""
    _touch(directory, f"start-raise-{kind}")
    raise ValueError(f"bad {kind}: " + ("a\x00b" if kind == "nul" else "\ud800"))


@_dj_task(max_retries=1)
def interrupt(directory: str) -> None:
    _touch(directory, "start-interrupt")
    raise KeyboardInterrupt


@_task
def exit_own_process() -> None:
    """The culprit: ends its whole worker at once, every time it runs."""
    _os._exit(3)


# --- The subprocess rung (tests/worker/test_subprocess_rung.py): handlers that end
# their own process, ignore their timeout or allocate past their memory limit. Each
# runs in a child of its worker; only its own job may suffer.


@_dj_task(execution="subprocess", max_retries=0)
def segfault() -> None:
    import ctypes

    ctypes.string_at(0)


@_dj_task(execution="subprocess", max_retries=0)
def exit_three() -> None:
    _os._exit(3)


@_dj_task(execution="subprocess", max_retries=0, timeout=_timedelta(seconds=1))
def spin_past_timeout() -> None:
    """Ignores its timeout and any signal Python can catch: a busy loop."""
    _signal.signal(_signal.SIGTERM, _signal.SIG_IGN)
    while True:
        pass


@_dj_task(execution="subprocess", max_retries=0, resource_limits={"memory": "64Mi"})
def allocate_past_limit(megabytes: int = 512) -> int:
    block = bytearray(megabytes * 2**20)
    return len(block)


@_dj_task(execution="subprocess")
def child_work(directory: str, key: str, megabytes: int = 8) -> dict:
    """Burns some CPU, touches memory and writes a file; says which process it ran in."""
    block = bytearray(megabytes * 2**20)
    for index in range(0, len(block), 4096):
        block[index] = 1
    total = sum(i * i for i in range(200_000))
    with open(_Path(directory) / f"written-{key}", "wb") as handle:
        handle.write(b"x" * 2**20)
        handle.flush()
        _os.fsync(handle.fileno())
    _touch(directory, f"done-{key}")
    return {"pid": _os.getpid(), "total": total}


@_dj_task(execution="subprocess")
def child_noop() -> None:
    return None


@_dj_task(execution="subprocess", max_retries=0)
def child_raises() -> None:
    raise _Permanent("refused in a child")


# --- The capacity ledger (tests/worker/test_ledger.py).


@_task(takes_context=True)
def ledger_hold(context, directory: str, seconds: float) -> None:
    """Runs ``seconds`` and records ``id start end`` (the system-wide monotonic
    clock), so the test can sum what ran at once."""
    start = _time.monotonic()
    _time.sleep(seconds)
    _touch(directory, "spans", f"{context.job_id} {start} {_time.monotonic()}")


@_dj_task
def take_anything(*args, **kwargs) -> None:
    """Binds every call: for tests of what enqueue makes of the arguments."""
