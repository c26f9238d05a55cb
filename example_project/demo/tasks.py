"""Demo jobs: one of each outcome, so every state shows up in the admin.

send_welcome_email   succeeds at once                      → completed
sync_inventory       fails twice, then succeeds           → retrying, then completed
charge_card          raises Permanent                     → failed (dead letter) at once
build_report         overruns its 2 s timeout (twice)     → retrying, then failed (timeout)
crunch_numbers       a little CPU work                    → completed, with CPU time
nightly_export       long-running, stops when asked       → running for a while
"""

from __future__ import annotations

from datetime import timedelta

from dispatch_jobs import Permanent, task


@task(queue_name="emails")
def send_welcome_email(user_id: int) -> str:
    return f"welcome mail sent to user {user_id}"


@task(takes_context=True, max_retries=3, retry_backoff_base=timedelta(seconds=2))
def sync_inventory(context, warehouse: str) -> dict:
    # context.attempt counts this job's attempts: 1 on the first run.
    if context.attempt < 3:
        raise ConnectionError(f"warehouse {warehouse} did not answer (attempt {context.attempt})")
    return {"warehouse": warehouse, "items": 1234}


@task(max_retries=5)
def charge_card(order_id: int) -> None:
    raise Permanent(f"card for order {order_id} was declined; retrying will not help")


@task(queue_name="reports", takes_context=True, timeout=timedelta(seconds=2), max_retries=1)
def build_report(context, name: str) -> str:
    # Cooperative: sleep() raises JobTimedOut once the 2 s deadline passes.
    context.sleep(10)
    return f"report {name} built"


@task
def crunch_numbers(n: int) -> int:
    return sum(i * i for i in range(n))


@task(queue_name="reports", takes_context=True, timeout=timedelta(minutes=5))
def nightly_export(context, seconds: float) -> str:
    context.sleep(seconds)
    return f"exported after {seconds:g}s"
