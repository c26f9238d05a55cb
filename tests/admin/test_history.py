"""Each object's History page (Django's admin log for it) renders: jobs, usage
rows and queue controls, with the entries the console's actions wrote."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse

from dispatch_jobs import store
from dispatch_jobs.models import Usage

from . import builders

pytestmark = pytest.mark.django_db


def _history(client, model: str, object_id: object):
    url = reverse(f"admin:dispatch_jobs_{model}_history", args=[object_id])
    response = client.get(url)
    assert response.status_code == 200, response.content[:800]
    return response.content.decode()


def test_a_jobs_history_lists_the_actions_taken_on_it(admin_client_):
    job = builders.failed(1, name="shop.tasks.charge_card")[0]
    admin_client_.post(
        reverse("admin:dispatch_jobs_job_action", args=["retry"]),
        {"ids": str(job.pk), "confirm": "yes"},
    )
    page = _history(admin_client_, "job", job.pk)
    assert "Retried as job #" in page
    assert "root" in page  # who did it


def test_a_job_without_entries_has_an_empty_history(viewer_client):
    job = builders.enqueue(1)[0]
    page = _history(viewer_client, "job", job.pk)
    assert "This object doesn’t have a change history" in page


def test_a_usage_rows_history_renders(admin_client_):
    [usage] = store.record_usages(
        [
            Usage(
                job_id=1,
                name="t",
                queue="default",
                attempt=1,
                status="completed",
                wall_time=timedelta(seconds=1),
            )
        ]
    )
    _history(admin_client_, "usage", usage.pk)


def test_a_queues_history_lists_its_pauses(admin_client_):
    admin_client_.post(reverse("admin:dispatch_jobs_queue_pause"), {"queue": "reports"})
    page = _history(admin_client_, "queuecontrol", "reports")
    assert "Paused queue" in page


def test_a_missing_objects_history_redirects(admin_client_):
    response = admin_client_.get(reverse("admin:dispatch_jobs_job_history", args=[10**30]))
    assert response.status_code == 302
