"""The job detail page: values, attempts, usage, lease, timeline; escaping and
redaction of everything that came from users."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import override_settings
from django.urls import reverse

from dispatch_jobs import store
from dispatch_jobs.admin import values
from dispatch_jobs.models import Job, Usage

from . import builders

pytestmark = pytest.mark.django_db
HOSTILE = "<script>alert('pwned')</script>"
HOSTILE_IMG = '"><img src=x onerror=alert(1)>'


def detail(client, job: Job):
    response = client.get(reverse("admin:dispatch_jobs_job_change", args=[job.pk]))
    assert response.status_code == 200
    return response


def test_hostile_user_data_is_escaped_everywhere(admin_client_):
    job = builders.failed(
        1,
        name=f"evil.{HOSTILE}",
        queue=f"q{HOSTILE_IMG}",
        payload={"args": [HOSTILE], "kwargs": {HOSTILE_IMG: HOSTILE}},
        scope_app_id=HOSTILE,
        error=f"ValueError: {HOSTILE}",
    )[0]
    pages = [
        detail(admin_client_, job),
        admin_client_.get(reverse("admin:dispatch_jobs_job_changelist")),
        admin_client_.get(reverse("admin:dispatch_jobs_job_deadletter")),
        admin_client_.get(
            reverse("admin:dispatch_jobs_job_action", args=["retry"]), {"ids": job.pk}
        ),
        admin_client_.get(reverse("admin:dispatch_jobs_job_changelist"), {"q": HOSTILE}),
    ]
    for page in pages:
        body = page.content.decode()
        assert page.status_code == 200
        assert "<script>alert(" not in body
        assert "<img src=x" not in body
    assert "&lt;script&gt;alert(" in pages[0].content.decode()


def test_arguments_return_value_attempts_and_timeline_are_shown(admin_client_):
    job = builders.completed(
        1, payload={"args": [1, 2], "kwargs": {"who": "ada"}}, return_value={"sum": 3}
    )[0]
    failed = builders.failed(1, error="KeyError: 'x'")[0]
    page = detail(admin_client_, job).content.decode()
    assert "&quot;who&quot;: &quot;ada&quot;" in page
    assert "&quot;sum&quot;: 3" in page
    assert "Enqueued" in page and "Finished" in page
    page = detail(admin_client_, failed).content.decode()
    assert "Attempt 1: failed" in page and "Traceback (most recent call last)" in page
    assert "KeyError: &#x27;x&#x27;" in page


def test_large_values_are_cut_with_a_link_to_the_full_plain_text(admin_client_):
    big = "x" * (values.PREVIEW_CHARS + 500)
    job = builders.enqueue(1, payload={"args": [big, "<b>the-tail-end</b>"], "kwargs": {}})[0]
    page = detail(admin_client_, job).content.decode()
    full_url = reverse("admin:dispatch_jobs_job_value", args=[job.pk, "payload"])
    assert full_url in page and "the-tail-end" not in page
    full = admin_client_.get(full_url)
    assert full["Content-Type"] == "text/plain; charset=utf-8"
    assert full["X-Content-Type-Options"] == "nosniff"
    assert "<b>the-tail-end</b>" in full.content.decode() and big in full.content.decode()
    assert (
        admin_client_.get(
            reverse("admin:dispatch_jobs_job_value", args=[job.pk, "last_error"])
        ).status_code
        == 404
    )


@override_settings(DISPATCH_JOBS={"REDACT": "tests.admin.redactors.hide_secrets"})
def test_the_redaction_hook_hides_secrets_on_every_page(admin_client_):
    job = builders.completed(
        1,
        payload={"args": [], "kwargs": {"password": "hunter2", "user": "ada"}},
        return_value={"token": "s3cr3t-token"},
    )[0]
    page = detail(admin_client_, job).content.decode()
    full = admin_client_.get(reverse("admin:dispatch_jobs_job_value", args=[job.pk, "payload"]))
    rv = admin_client_.get(reverse("admin:dispatch_jobs_job_value", args=[job.pk, "return_value"]))
    for body in (page, full.content.decode(), rv.content.decode()):
        assert "hunter2" not in body and "s3cr3t-token" not in body
    assert "ada" in page and "•••" in page


def test_lease_and_usage_of_a_running_job(admin_client_):
    job = builders.running(1)[0]
    store.record_usage(
        Usage(
            job_id=job.pk,
            name=job.name,
            queue=job.queue,
            attempt=1,
            status="failed",
            wall_time=timedelta(seconds=2),
            peak_rss=10 * 1024 * 1024,
            worker_id="w9",
        )
    )
    response = detail(admin_client_, job)
    left = response.context["lease_left"]
    assert timedelta(minutes=4) < left <= timedelta(minutes=5)
    page = response.content.decode()
    assert builders.WORKER in page and "10.0\xa0MB" in page and "w9" in page


def test_a_missing_job_is_a_404_style_redirect_not_a_500(admin_client_):
    response = admin_client_.get(reverse("admin:dispatch_jobs_job_change", args=[987654]))
    assert response.status_code in (302, 404)
