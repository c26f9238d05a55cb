"""Operator actions on jobs: replay, cancel, run now, delete.

Each takes job ids and returns an ``OperationReport``: which jobs it changed and
which it skipped, with the reason for each skip. None of them ever touches a
running job's lease columns; a job a worker holds is skipped, not overwritten.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.db.models.functions import Now

from ..models import READY_STATES, Job, JobState
from . import db
from .enqueue import enqueue_job

# Asking running jobs to stop: how often to try a row its worker holds, and how
# long to wait between tries (about a second in all).
STOP_REQUEST_TRIES = 20
STOP_REQUEST_PAUSE = 0.05

REPLAYABLE_STATES = (JobState.FAILED, JobState.CANCELLED)

# The columns a replay copies: what the job is and how it runs, never what
# happened to the original (attempts, errors, lease, timestamps).
REPLAY_COPIED_FIELDS = (
    "name",
    "queue",
    "payload",
    "priority",
    "max_retries",
    "scope_app_id",
    "scope_org_id",
    "timeout",
    "artifact_bindings",
    "resources",
    "resource_limits",
    "resource_class",
    "execution",
    "input_bytes",
    "primary_input_hash",
    "lease_ttl",
)


@dataclass
class OperationReport:
    """What an operator action did: ``done`` ids (for a replay: original id →
    new job id in ``created``) and ``skipped`` ids with the reason for each."""

    action: str
    done: list[int] = field(default_factory=list)
    skipped: dict[int, str] = field(default_factory=dict)
    created: dict[int, int] = field(default_factory=dict)
    # Running jobs asked to stop (cancel): their workers stop them and write them
    # cancelled at their next heartbeat.
    requested: list[int] = field(default_factory=list)

    def summary(self) -> str:
        """One line for a person: counts, then the first few skip reasons."""
        text = f"{self.action}: {len(self.done)} done, {len(self.skipped)} skipped"
        if self.requested:
            text += f", {len(self.requested)} running asked to stop"
        if self.skipped:
            shown = list(self.skipped.items())[:5]
            reasons = "; ".join(f"#{job_id} {reason}" for job_id, reason in shown)
            more = f"; and {len(self.skipped) - 5} more" if len(self.skipped) > 5 else ""
            text += f" ({reasons}{more})"
        return text + "."


def _jobs() -> QuerySet[Job]:
    return Job.objects.using(db.alias())


def _unique_ids(job_ids: Iterable[int]) -> list[int]:
    return sorted({int(job_id) for job_id in job_ids})


def _lock_available_ids(rows: QuerySet[Job]) -> list[int]:
    """Lock ``rows`` and return their ids, inside the caller's transaction.

    SKIP LOCKED: a row a claim or another operator holds right now is left out
    (and reported as busy) rather than waited for.
    """
    return list(rows.select_for_update(skip_locked=True).values_list("id", flat=True))


def _explain_skips(
    report: OperationReport, ids: Iterable[int], why_skipped: Callable[[str], str]
) -> None:
    """Fill ``report.skipped`` for the ids not done: "does not exist", or what
    ``why_skipped`` says of the job's current state."""
    done = set(report.done)
    left = [job_id for job_id in ids if job_id not in done]
    states = dict(_jobs().filter(id__in=left).values_list("id", "state"))
    for job_id in left:
        state = states.get(job_id)
        report.skipped[job_id] = "does not exist" if state is None else why_skipped(state)


def _why_not_ready(state: str) -> str:
    if state in READY_STATES:
        # Eligible by state but locked by a claim or another operator just now.
        return "is busy (being claimed or changed); try again"
    return f"is {state}; only pending or retrying jobs qualify"


def _why_not_deleted(state: str) -> str:
    if state == JobState.RUNNING:
        return "is running; a worker holds it"
    return "is busy (being changed); try again"


def replay_jobs(job_ids: Iterable[int]) -> OperationReport:
    """Retry failed or cancelled jobs as new pending jobs linked by ``replay_of``.

    The original stays as it is (history is not rewritten). A job is replayed at
    most once: ``replay_of`` is unique, so when two operators replay the same job
    at the same moment one insert wins and the other is skipped as "already
    retried" by the database, not by a check that could race.
    """
    report = OperationReport("retry")
    ids = _unique_ids(job_ids)
    originals = {job.id: job for job in _jobs().filter(id__in=ids)}
    replayed = dict(
        _jobs().filter(replay_of_id__in=list(originals)).values_list("replay_of_id", "id")
    )
    for job_id in ids:
        original = originals.get(job_id)
        if original is None:
            report.skipped[job_id] = "does not exist"
        elif original.state not in REPLAYABLE_STATES:
            report.skipped[job_id] = (
                f"is {original.state}; only failed or cancelled jobs can be retried"
            )
        elif job_id in replayed:
            report.skipped[job_id] = f"already retried as #{replayed[job_id]}"
        else:
            _replay_one(original, report)
    return report


def _replay_one(original: Job, report: OperationReport) -> None:
    copy = Job(**{name: getattr(original, name) for name in REPLAY_COPIED_FIELDS})
    copy.replay_of_id = original.id
    try:
        # A savepoint of its own: a unique violation (a concurrent replay won)
        # rolls back only this insert, even inside the caller's transaction.
        with transaction.atomic(using=db.alias()):
            enqueue_job(copy)
    except IntegrityError:
        winner = _jobs().filter(replay_of_id=original.id).values_list("id", flat=True).first()
        report.skipped[original.id] = (
            f"already retried as #{winner}" if winner else ("already retried")
        )
        return
    report.done.append(original.id)
    report.created[original.id] = copy.id


def _change_ready_jobs(
    action: str, job_ids: Iterable[int], changes: dict[str, object]
) -> OperationReport:
    """Apply ``changes`` to the ids that are pending or retrying, atomically.

    The rows are locked with SKIP LOCKED before the UPDATE, and the UPDATE
    repeats the state condition: a job a worker is claiming at this instant is
    either skipped here or already running, never cancelled under the worker.
    """
    report = OperationReport(action)
    ids = _unique_ids(job_ids)
    with transaction.atomic(using=db.alias()):
        locked = _lock_available_ids(_jobs().filter(id__in=ids, state__in=READY_STATES))
        if locked:
            _jobs().filter(id__in=locked, state__in=READY_STATES).update(
                **changes, updated_at=Now()
            )
    report.done = sorted(locked)
    _explain_skips(report, ids, _why_not_ready)
    return report


def cancel_jobs(job_ids: Iterable[int], by: str = "") -> OperationReport:
    """Cancel pending or retrying jobs at once, and ask running ones to stop
    (``report.requested``): the worker holding one sees the request at its next
    heartbeat, stops the handler and writes the job cancelled; if that worker is
    gone, the reclaim does. ``by`` (who asked) is kept on the row. Any other
    state is skipped with its reason."""
    by = by[:150]
    changes = {
        "state": JobState.CANCELLED,
        "completed_at": Now(),
        "cancel_requested_at": Now(),
        "cancel_requested_by": by,
    }
    report = _change_ready_jobs("cancel", job_ids, changes)
    running = {job_id for job_id, why in report.skipped.items() if why.startswith("is running")}
    asked: list[int] = []
    # A running row is locked only for a moment at a time (its worker renewing the
    # lease or writing the outcome): try again shortly rather than drop the request.
    for attempt in range(STOP_REQUEST_TRIES):
        if not running:
            break
        if attempt:
            time.sleep(STOP_REQUEST_PAUSE)
        with transaction.atomic(using=db.alias()):
            # Never the lease columns: the worker holding the job stays its owner.
            marked = _lock_available_ids(_jobs().filter(id__in=running, state=JobState.RUNNING))
            _jobs().filter(id__in=marked, cancel_requested_at__isnull=True).update(
                cancel_requested_at=Now(), cancel_requested_by=by, updated_at=Now()
            )
        asked += marked
        still = set(
            _jobs().filter(id__in=running, state=JobState.RUNNING).values_list("id", flat=True)
        )
        for job_id in running - still - set(marked):
            report.skipped[job_id] = "finished while the cancel was being asked"
        running = still - set(marked)
    for job_id in running:
        report.skipped[job_id] = "is running and its worker held it throughout; try again"
    report.requested = sorted(asked)
    for job_id in asked:
        del report.skipped[job_id]
    return report


def run_jobs_now(job_ids: Iterable[int]) -> OperationReport:
    """Make pending or retrying jobs due at once: run_at = the database's now."""
    return _change_ready_jobs("run now", job_ids, {"run_at": Now()})


def delete_jobs(job_ids: Iterable[int]) -> OperationReport:
    """Delete jobs that are not running. A running job is skipped: its worker
    holds a lease on it; cancel is not possible either, so wait for it to end."""
    report = OperationReport("delete")
    ids = _unique_ids(job_ids)
    with transaction.atomic(using=db.alias()):
        deletable = _lock_available_ids(_jobs().filter(id__in=ids).exclude(state=JobState.RUNNING))
        if deletable:
            _jobs().filter(id__in=deletable).exclude(state=JobState.RUNNING).delete()
    report.done = sorted(deletable)
    _explain_skips(report, ids, _why_not_deleted)
    return report
