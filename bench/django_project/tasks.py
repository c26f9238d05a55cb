"""The no-op job every Django-based system runs: it does nothing and returns None."""

from django.tasks import task


@task
def noop() -> None:
    """Do nothing: the bench measures the queue, not the job."""
