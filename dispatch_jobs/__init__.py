"""dispatch_jobs: a durable, database-backed background job engine for Django."""

from .exceptions import (
    DispatchJobsError,
    InvalidCursor,
    InvalidJob,
    InvalidResources,
    JobNotFound,
    LeaseLost,
    LeaseWithoutWorker,
    PayloadTooLarge,
    Permanent,
)
from .task import task

__all__ = [
    "DispatchJobsError",
    "InvalidCursor",
    "InvalidJob",
    "InvalidResources",
    "JobNotFound",
    "LeaseLost",
    "LeaseWithoutWorker",
    "PayloadTooLarge",
    "Permanent",
    "task",
]
