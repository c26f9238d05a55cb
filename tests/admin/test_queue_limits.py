"""The queues view shows each queue's limits; the limits form edits them, with
its own permission, validation, the admin log, and a way back to the settings."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.admin.models import LogEntry
from django.test import override_settings
from django.urls import reverse

from dispatch_jobs import store
from dispatch_jobs.models import LimitsSource
from dispatch_jobs.queue_limits import QueueLimits
from dispatch_jobs.store import ClaimOptions

from . import builders

pytestmark = pytest.mark.django_db
QUEUES = reverse("admin:dispatch_jobs_queuecontrol_changelist")
LIMITS = reverse("admin:dispatch_jobs_queue_limits")


@pytest.fixture(autouse=True)
def _fresh_limits():
    store.forget_limited_queues()
    yield
    store.forget_limited_queues()


def _row(response, name: str):
    return next(row for row in response.context["rows"] if row.name == name)


def test_the_queues_view_shows_limits_and_who_set_them(admin_client_):
    store.set_queue_limits(
        "default",
        QueueLimits(max_running=5, rate_limit=100, rate_period=timedelta(minutes=1)),
    )
    page = admin_client_.get(QUEUES)
    assert page.status_code == 200
    row = _row(page, "default")
    assert row.limits == "5 running, 100 per 1m" and row.limits_source == "Admin"
    html = page.content.decode()
    assert "5 running, 100 per 1m" in html and 'class="dj-edit-limits"' in html


def test_editing_limits_takes_effect_at_the_next_claim(operator):
    client = operator("limit_queue")
    builders.enqueue(6, queue="reports")
    form = client.get(LIMITS, {"queue": "reports"})
    assert form.status_code == 200 and b"no limits" in form.content
    response = client.post(
        LIMITS,
        {
            "queue": "reports",
            "max_running": "2",
            "max_running_per_org": "",
            "rate_limit": "10",
            "rate_period": "1m",
        },
    )
    assert response.status_code == 302
    expected = QueueLimits(max_running=2, rate_limit=10, rate_period=timedelta(minutes=1))
    assert store.queue_limits("reports") == (expected, LimitsSource.ADMIN)
    claimed = store.claim_jobs(ClaimOptions(queues=["reports"], limit=6))
    assert len(claimed) == 2
    assert LogEntry.objects.filter(
        change_message="Set queue 'reports' limits: 2 running, 10 per 1m."
    ).exists()
    # The form shows what is stored.
    again = client.get(LIMITS, {"queue": "reports"})
    assert again.context["form"].initial["rate_period"] == "1m"
    # Emptied: unlimited again.
    client.post(
        LIMITS, {"queue": "reports", "max_running": "", "rate_limit": "", "rate_period": ""}
    )
    assert store.queue_limits("reports")[0] == QueueLimits()
    assert len(store.claim_jobs(ClaimOptions(queues=["reports"], limit=6))) == 4


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"max_running": "0"}, "max_running", "to stop a queue, pause it"),
        ({"max_running": "-3"}, "max_running", "Enter a whole number from 1"),
        ({"max_running": "2.5"}, "max_running", "Enter a whole number from 1"),
        ({"max_running_per_org": "99999999999"}, "max_running_per_org", "from 1 to 1,000,000"),
        ({"rate_limit": "5"}, "__all__", "needs both its number of starts and its period"),
        ({"rate_period": "1m"}, "__all__", "needs both its number of starts and its period"),
        ({"rate_limit": "5", "rate_period": "0.1s"}, "rate_period", "between 1s and 1 day"),
        ({"rate_limit": "5", "rate_period": "a week"}, "rate_period", "cannot read"),
    ],
)
def test_bad_input_is_refused_with_the_reason(operator, fields, field, message):
    client = operator("limit_queue")
    response = client.post(LIMITS, {"queue": "reports", **fields})
    assert response.status_code == 200
    errors = response.context["form"].errors[field]
    assert any(message in error for error in errors), errors
    assert store.queue_limits("reports")[0] == QueueLimits()


def test_a_bad_queue_name_is_refused(operator):
    client = operator("limit_queue")
    response = client.post(LIMITS, {"queue": "x" * 101, "max_running": "1"})
    assert response.status_code == 302
    assert store.limited_queues() == frozenset()


def test_limits_need_their_own_permission(operator, viewer_client):
    page = viewer_client.get(QUEUES)
    assert page.status_code == 200 and b"dj-edit-limits" not in page.content
    assert viewer_client.get(LIMITS, {"queue": "default"}).status_code == 403
    pauser = operator("pause_queue")
    assert pauser.post(LIMITS, {"queue": "default", "max_running": "1"}).status_code == 403
    assert store.queue_limits("default")[0] == QueueLimits()


@override_settings(DISPATCH_JOBS={"QUEUE_LIMITS": {"reports": {"max_running": 4}}})
def test_handing_a_queue_back_to_the_settings(operator):
    client = operator("limit_queue")
    store.set_queue_limits("reports", QueueLimits(max_running=1))
    response = client.post(LIMITS, {"queue": "reports", "use_settings": "1"})
    assert response.status_code == 302
    assert store.queue_limits("reports") == (QueueLimits(max_running=4), LimitsSource.SETTINGS)
