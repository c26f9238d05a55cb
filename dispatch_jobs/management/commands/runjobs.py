"""``manage.py runjobs``: run a dispatch_jobs worker. Thin: parse and validate the
arguments, then hand over to ``dispatch_jobs.worker.pool.Pool``."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from dispatch_jobs.exceptions import WorkerConfigError
from dispatch_jobs.worker.config import build_config
from dispatch_jobs.worker.verbosity import configure_logging

VERBOSITY_HELP = (
    "0: the worker's warnings only; 1 (default): one line per finished job; "
    "2: also tracebacks, claim batches and Django's task_started/task_finished lines."
)


class Command(BaseCommand):
    help = (
        "Run a worker: claim ready jobs under fenced leases and run them. SIGTERM or "
        "SIGINT drains gracefully (a second signal hands running jobs back at once). "
        "Without --queue it serves every queue your TASKS setting lets jobs into; "
        "other defaults come from settings.DISPATCH_JOBS (docs/worker.md)."
    )

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any) -> CommandParser:
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        for action in parser._actions:
            if action.dest == "verbosity":
                action.help = VERBOSITY_HELP
        return parser

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--queue",
            action="append",
            dest="queues",
            metavar="NAME",
            help="A queue to claim from (repeatable, or comma-separated). Default: "
            "every queue named in the QUEUES of your dispatch_jobs backends in "
            "settings.TASKS (['default'] when QUEUES is not set; every queue when it "
            "is []), unless DISPATCH_JOBS['WORKER_QUEUES'] lists them. The queues "
            "served are logged at start.",
        )
        parser.add_argument(
            "--concurrency", metavar="N", help="Jobs run at once (threads). Default 4."
        )
        parser.add_argument(
            "--prefetch",
            metavar="N",
            help="Jobs claimed ahead of free threads, held under lease until a thread "
            "is free, for throughput (default DISPATCH_JOBS['WORKER_PREFETCH'], 0: claim "
            "only for free threads).",
        )
        parser.add_argument(
            "--budget",
            metavar="SPEC",
            help="Capacity offered to claims, e.g. cpu=4,memory=8Gi,gpu=1,fpga=1.",
        )
        parser.add_argument(
            "--execution",
            metavar="RUNG",
            help="The rung every job runs at: in-process (threads, the default) or "
            "subprocess (supervised child processes: hard timeouts and memory limits, "
            "crashes contained, full usage accounting). Only jobs needing that rung or "
            "less are claimed. Default DISPATCH_JOBS['WORKER_EXECUTION'].",
        )
        parser.add_argument(
            "--lease-ttl", metavar="D", help="Lease length, e.g. 30 or 30s (default 30s)."
        )
        parser.add_argument(
            "--heartbeat", metavar="D", help="Lease renewal interval (default 10s)."
        )
        parser.add_argument(
            "--poll-interval", metavar="D", help="First idle poll delay (default 1s)."
        )
        parser.add_argument(
            "--max-poll-interval", metavar="D", help="Longest idle poll delay (default 5s)."
        )
        parser.add_argument(
            "--burst", action="store_true", help="Run what is ready now, then exit."
        )
        parser.add_argument("--max-jobs", metavar="N", help="Exit after running this many jobs.")
        parser.add_argument(
            "--worker-id", metavar="ID", help="This worker's id (default host:pid:random)."
        )
        parser.add_argument(
            "--shutdown-grace",
            metavar="D",
            help="Wait this long for running jobs on SIGTERM (default 30s).",
        )
        parser.add_argument(
            "--max-evictions",
            metavar="N",
            help="Fail a job evicted more than this many times (default 5).",
        )
        parser.add_argument(
            "--maintenance-interval",
            metavar="D",
            help="Maintenance tick, incl. lease reclaim (default 5s).",
        )
        parser.add_argument(
            "--no-maintenance",
            action="store_true",
            help="Never take part in the maintenance election.",
        )
        parser.add_argument(
            "--summary-interval", metavar="D", help="Summary log interval (default 60s)."
        )
        parser.add_argument(
            "--metrics-port",
            metavar="[HOST:]PORT",
            help="Serve Prometheus metrics on this port (needs the 'metrics' extra).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            config = build_config(options)
        except WorkerConfigError as exc:
            raise CommandError(str(exc)) from exc
        from dispatch_jobs.conf import settings
        from dispatch_jobs.worker.schema import unapplied_migrations

        missing = unapplied_migrations(settings.database)
        if missing is None:
            pass  # database not answering yet: the worker waits for it, as always
        elif missing:
            raise CommandError(
                f"The job tables are not migrated ({', '.join(missing)} not applied "
                f"to database {settings.database!r}): run `python manage.py migrate` first."
            )
        configure_logging(int(options.get("verbosity", 1)))
        from dispatch_jobs.worker.pool import Pool

        try:
            pool = Pool(config)  # binds the metrics port, when asked to
        except WorkerConfigError as exc:
            raise CommandError(str(exc)) from exc
        pool.shutdown.install()
        try:
            pool.run()
        finally:
            pool.shutdown.restore()
