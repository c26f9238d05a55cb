"""The job engine's tables: jobs, per-attempt usage, live workers, the small
tables the fleet coordinates through (maintenance leadership, queue controls and
the rate window), the dashboard's rollup, periodic schedules with their fired
ticks, and the artifacts jobs take as inputs; one module per noun.

Only ``dispatch_jobs.store`` writes these rows.
"""

from .artifacts import Artifact
from .fleet import (
    LIMITED,
    Leadership,
    LimitsSource,
    QueueControl,
    QueueStart,
    Worker,
    WorkerState,
)
from .jobs import FINISHED_STATES, READY_STATES, Job, JobQuerySet, JobState, Quarantine
from .rollup import RollupMark, TaskMinute
from .schedules import Schedule, ScheduleSource, ScheduleTick
from .usage import Usage

__all__ = [
    "Artifact",
    "FINISHED_STATES",
    "Job",
    "JobQuerySet",
    "JobState",
    "LIMITED",
    "Leadership",
    "LimitsSource",
    "Quarantine",
    "QueueControl",
    "QueueStart",
    "READY_STATES",
    "RollupMark",
    "Schedule",
    "ScheduleSource",
    "ScheduleTick",
    "TaskMinute",
    "Usage",
    "Worker",
    "WorkerState",
]
