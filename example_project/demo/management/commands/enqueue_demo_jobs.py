"""``manage.py enqueue_demo_jobs``: enqueue one batch of every demo job."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.utils import timezone

from example_project.demo import tasks


class Command(BaseCommand):
    help = "Enqueue demo jobs that succeed, retry, fail, time out, run long and wait."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--rounds", type=int, default=1, help="How many batches.")

    def handle(self, *args: Any, **options: Any) -> None:
        count = 0
        for round_ in range(options["rounds"]):
            for user_id in range(1, 6):
                tasks.send_welcome_email.enqueue(user_id + 100 * round_)
            tasks.sync_inventory.enqueue("north")
            tasks.charge_card.enqueue(4242 + round_)
            tasks.build_report.enqueue("quarterly")
            tasks.crunch_numbers.enqueue(200_000)
            tasks.nightly_export.enqueue(45)
            # Pending for the next ten minutes: the "scheduled" view of the admin.
            later = timezone.now() + timedelta(minutes=10)
            tasks.send_welcome_email.using(run_after=later).enqueue(999)
            count += 11
        self.stdout.write(f"Enqueued {count} demo jobs.")
