"""Operator actions through the admin: permissions, state guards, confirmation,
the bulk cap, the admin log, and that the store did the writing."""

from __future__ import annotations

import pytest
from django.contrib.admin.models import DELETION, LogEntry
from django.test import override_settings
from django.urls import reverse

from dispatch_jobs.models import Job, JobState

from . import builders

pytestmark = pytest.mark.django_db
LIST = reverse("admin:dispatch_jobs_job_changelist")


def action_url(name: str) -> str:
    return reverse("admin:dispatch_jobs_job_action", args=[name])


def _messages(response) -> list[str]:
    return [str(m) for m in response.context["messages"]] if response.context else []


def _choose(client, action: str, ids: list[int], **extra):
    data = {"action": action, "_selected_action": [str(i) for i in ids], "index": "0", **extra}
    return client.post(LIST, data)


def test_retry_goes_through_a_confirmation_page_and_replays(admin_client_):
    job = builders.failed(1)[0]
    confirm = _choose(admin_client_, "retry_jobs", [job.pk])
    assert confirm.status_code == 200
    assert confirm.templates[0].name == "dispatch_jobs/admin/job/confirm_action.html"
    assert not Job.objects.filter(replay_of=job).exists()  # nothing happens before "yes"
    assert f"#{job.pk}".encode() in confirm.content
    done = admin_client_.post(
        action_url("retry"), {"ids": str(job.pk), "confirm": "yes", "next": LIST}, follow=True
    )
    copy = Job.objects.get(replay_of=job)
    assert copy.state == JobState.PENDING
    text = " ".join(_messages(done))
    assert "1 job(s) retried" in text and f"#{job.pk} → #{copy.pk}" in text
    entry = LogEntry.objects.get(object_id=str(job.pk))
    assert entry.change_message == f"Retried as job #{copy.pk}."


def test_each_action_reports_done_and_skipped_with_reasons(admin_client_):
    pending = builders.enqueue(1)[0]
    failed = builders.failed(1)[0]
    response = admin_client_.post(
        action_url("cancel"),
        {"ids": f"{pending.pk},{failed.pk}", "confirm": "yes"},
        follow=True,
    )
    text = " ".join(_messages(response))
    assert "1 job(s) cancelled" in text
    assert f"#{failed.pk} is failed; only pending or retrying jobs qualify" in text
    assert Job.objects.get(pk=pending.pk).state == JobState.CANCELLED
    assert Job.objects.get(pk=failed.pk).state == JobState.FAILED
    assert LogEntry.objects.filter(object_id=str(pending.pk)).count() == 1
    assert not LogEntry.objects.filter(object_id=str(failed.pk)).exists()


def test_run_now_and_delete_actions(admin_client_):
    pending = builders.enqueue(1)[0]
    done = builders.completed(1)[0]
    held = builders.running(1)[0]
    admin_client_.post(action_url("run_now"), {"ids": str(pending.pk), "confirm": "yes"})
    assert LogEntry.objects.filter(object_id=str(pending.pk)).exists()
    response = admin_client_.post(
        action_url("delete"), {"ids": f"{done.pk},{held.pk}", "confirm": "yes"}, follow=True
    )
    assert not Job.objects.filter(pk=done.pk).exists()
    assert Job.objects.filter(pk=held.pk).exists()
    assert "is running; a worker holds it" in " ".join(_messages(response))
    assert LogEntry.objects.get(object_id=str(done.pk)).action_flag == DELETION


def test_django_delete_selected_is_replaced_by_the_store_backed_one(admin_client_):
    done = builders.completed(1)[0]
    confirm = _choose(admin_client_, "delete_selected", [done.pk])
    assert confirm.templates[0].name == "dispatch_jobs/admin/job/confirm_action.html"
    assert Job.objects.filter(pk=done.pk).exists()


def test_a_get_on_an_action_url_only_confirms(admin_client_):
    job = builders.failed(1)[0]
    response = admin_client_.get(action_url("retry"), {"ids": job.pk})
    assert response.status_code == 200 and b"Yes, retry" in response.content
    response = admin_client_.post(action_url("retry"), {"ids": job.pk})  # no confirm=yes
    assert response.status_code == 200
    assert not Job.objects.filter(replay_of=job).exists()


def test_view_only_user_sees_no_actions_and_gets_403(viewer_client):
    job = builders.failed(1)[0]
    response = viewer_client.get(LIST)
    assert response.status_code == 200
    assert response.context["action_form"] is None
    assert b'name="_selected_action"' not in response.content
    detail = viewer_client.get(reverse("admin:dispatch_jobs_job_change", args=[job.pk]))
    assert detail.status_code == 200 and b"dj-action-" not in detail.content
    for name in ("retry", "cancel", "run_now", "delete"):
        assert viewer_client.get(action_url(name), {"ids": job.pk}).status_code == 403
        post = viewer_client.post(action_url(name), {"ids": job.pk, "confirm": "yes"})
        assert post.status_code == 403
    retry_group = reverse("admin:dispatch_jobs_job_deadletter_retry")
    assert viewer_client.get(retry_group).status_code == 403
    assert not Job.objects.filter(replay_of=job).exists()


def test_each_action_needs_its_own_permission(operator):
    job = builders.failed(1)[0]
    pending = builders.enqueue(1)[0]
    canceller = operator("cancel_job")
    choices = dict(canceller.get(LIST).context["action_form"].fields["action"].choices)
    assert set(choices) - {""} == {"cancel_jobs"}
    assert canceller.post(action_url("retry"), {"ids": job.pk, "confirm": "yes"}).status_code == 403
    canceller.post(action_url("cancel"), {"ids": pending.pk, "confirm": "yes"})
    assert Job.objects.get(pk=pending.pk).state == JobState.CANCELLED
    retrier = operator("retry_job")
    detail = retrier.get(reverse("admin:dispatch_jobs_job_change", args=[job.pk]))
    assert b"dj-action-retry" in detail.content and b"dj-action-cancel" not in detail.content
    assert retrier.post(action_url("retry"), {"ids": job.pk, "confirm": "yes"}).status_code == 302
    assert Job.objects.filter(replay_of=job).count() == 1
    runner = operator("run_job_now")
    assert runner.post(action_url("run_now"), {"ids": job.pk}).status_code == 200
    deleter = operator("delete_job")
    assert deleter.post(action_url("cancel"), {"ids": job.pk}).status_code == 403


def test_cancel_asks_a_running_job_to_stop_and_says_so(admin_client_):
    held = builders.running(1)[0]
    confirm = admin_client_.get(action_url("cancel"), {"ids": str(held.pk)})
    assert b"Yes, cancel 1 job" in confirm.content  # a running job counts as eligible
    response = admin_client_.post(
        action_url("cancel"), {"ids": str(held.pk), "confirm": "yes"}, follow=True
    )
    text = " ".join(_messages(response))
    assert "1 running job(s) asked to stop" in text
    row = Job.objects.get(pk=held.pk)
    assert row.state == JobState.RUNNING and row.cancel_requested_at is not None
    assert row.cancel_requested_by == "root"
    entry = LogEntry.objects.get(object_id=str(held.pk))
    assert entry.change_message == "Cancel requested while running, from the admin."


def test_detail_buttons_follow_the_state(admin_client_):
    held = builders.running(1)[0]
    page = admin_client_.get(reverse("admin:dispatch_jobs_job_change", args=[held.pk]))
    # A running job can only be asked to stop: nothing else may touch it.
    assert b"dj-action-cancel" in page.content
    for name in (b"retry", b"run_now", b"delete"):
        assert b"dj-action-" + name not in page.content
    pending = builders.enqueue(1)[0]
    page = admin_client_.get(reverse("admin:dispatch_jobs_job_change", args=[pending.pk]))
    for name in (b"cancel", b"run_now", b"delete"):
        assert b"dj-action-" + name in page.content
    assert b"dj-action-retry" not in page.content


def test_apply_to_all_matching_is_capped(admin_client_):
    jobs = builders.failed(4)
    builders.enqueue(2)
    # As Django's actions.js posts it: the page's ticked rows plus select_across.
    across: dict[str, object] = {"action": "retry_jobs", "select_across": "1", "index": "0"}
    across["_selected_action"] = [str(jobs[0].pk)]
    with override_settings(DISPATCH_JOBS={"ADMIN_BULK_CAP": 3}):
        refused = admin_client_.post(LIST + "?state=failed", across, follow=True)
        assert any("More than 3 jobs match" in m for m in _messages(refused))
        assert not Job.objects.filter(replay_of__isnull=False).exists()
        too_many = admin_client_.post(
            action_url("retry"), {"ids": "1,2,3,4", "confirm": "yes"}, follow=True
        )
        assert any("over the cap of 3" in m for m in _messages(too_many))
    with override_settings(DISPATCH_JOBS={"ADMIN_BULK_CAP": 4}):
        confirm = admin_client_.post(LIST + "?state=failed", across)
        assert confirm.status_code == 200 and confirm.context["selected"] == 4
        admin_client_.post(action_url("retry"), {"ids": confirm.context["ids"], "confirm": "yes"})
    assert Job.objects.filter(replay_of__isnull=False).count() == 4


def test_bad_ids_change_nothing(admin_client_):
    response = admin_client_.post(
        action_url("cancel"), {"ids": "1,x", "confirm": "yes"}, follow=True
    )
    assert any("whole numbers" in m for m in _messages(response))
    assert admin_client_.get(action_url("nope")).status_code == 404


def test_next_must_stay_on_this_site(admin_client_):
    job = builders.enqueue(1)[0]
    response = admin_client_.post(
        action_url("cancel"), {"ids": job.pk, "confirm": "yes", "next": "https://evil.example/"}
    )
    assert response.status_code == 302 and response.url == LIST
