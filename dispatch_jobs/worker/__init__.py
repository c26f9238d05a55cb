"""The engine behind ``runjobs``: fetch → execute → complete, with a heartbeat
renewing leases and maintenance on one elected worker. See docs/worker.md."""

from ..exceptions import JobCancelled, JobTimedOut
from .context import JobContext, current_job
from .inline import drain

__all__ = ["JobCancelled", "JobContext", "JobTimedOut", "current_job", "drain"]
