"""dispatch_jobs: a durable, database-backed background job engine for Django."""

# The one version source: pyproject.toml reads it (setuptools' dynamic version).
__version__ = "0.1.0"

from .exceptions import (
    DispatchJobsError,
    InvalidCursor,
    InvalidJob,
    InvalidResources,
    InvalidSchedule,
    JobNotFound,
    LeaseLost,
    LeaseWithoutWorker,
    PayloadTooLarge,
    Permanent,
)
from .inputs import InputSpec
from .schedules import periodic
from .task import task

__all__ = [
    "DispatchJobsError",
    "InvalidCursor",
    "InvalidJob",
    "InputSpec",
    "InvalidResources",
    "InvalidSchedule",
    "JobNotFound",
    "LeaseLost",
    "LeaseWithoutWorker",
    "PayloadTooLarge",
    "Permanent",
    "periodic",
    "task",
]
