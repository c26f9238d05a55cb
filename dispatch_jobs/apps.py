from django.apps import AppConfig


class DispatchJobsConfig(AppConfig):
    name = "dispatch_jobs"
    verbose_name = "Dispatch jobs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Installs the connection hook that puts MariaDB/MySQL sessions in UTC,
        # before any connection to the jobs database opens.
        from . import (
            checks,  # noqa: F401  (registers the system checks)
            store,  # noqa: F401
        )
