"""The schedules admin: the list with next fire and last outcome, the change
form's checks, and enable / disable / run now behind their own permissions."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.urls import reverse

from dispatch_jobs import scheduler, store
from dispatch_jobs.models import Job, Schedule, ScheduleSource
from dispatch_jobs.schedules import make_spec

pytestmark = pytest.mark.django_db
LIST = reverse("admin:dispatch_jobs_schedule_changelist")
ADD = reverse("admin:dispatch_jobs_schedule_add")
TASK = "tests.jobs.tasks.add"


def schedule(name: str = "adder", **fields) -> Schedule:
    values = {"task": TASK, "cron": "*/5 * * * *", "args": [1, 2], **fields}
    return store.save_schedule(Schedule(name=name, **values))


def client_with(*codenames: str) -> Client:
    user = User.objects.create_user("_".join(codenames) or "nobody", password="pw", is_staff=True)
    user.user_permissions.add(
        *Permission.objects.filter(content_type__app_label="dispatch_jobs", codename__in=codenames)
    )
    client = Client()
    client.force_login(user)
    return client


def choose(client: Client, action: str, rows: list[Schedule]):
    data = {"action": action, "_selected_action": [str(r.pk) for r in rows], "index": "0"}
    return client.post(LIST, data, follow=True)


def form_data(**fields) -> dict[str, str]:
    data = {
        "name": "nightly",
        "task": TASK,
        "cron": "0 2 * * *",
        "interval": "",
        "timezone": "Europe/Paris",
        "args": "[1, 2]",
        "kwargs": "{}",
        "queue": "",
        "priority": "",
        "missed": "latest",
        "enabled": "on",
    }
    data.update(fields)
    return data


def test_the_list_shows_timing_next_fire_and_the_last_runs_outcome(admin_client_):
    row = schedule(timezone="Europe/Paris")
    job = scheduler.run_now(row)
    schedule("off", enabled=False)
    response = admin_client_.get(LIST)
    assert response.status_code == 200
    text = response.content.decode()
    assert "*/5 * * * * (Europe/Paris)" in text
    assert f"#{job.pk} pending" in text
    assert reverse("admin:dispatch_jobs_job_change", args=[job.pk]) in text
    assert "disabled" in text
    Job.objects.filter(pk=job.pk).delete()
    assert f"#{job.pk} (purged)" in admin_client_.get(LIST).content.decode()


def test_the_change_form_creates_a_schedule_through_the_store(admin_client_):
    response = admin_client_.post(ADD, form_data(), follow=True)
    assert response.status_code == 200
    row = Schedule.objects.get(name="nightly")
    assert (row.source, row.timezone, row.args) == (ScheduleSource.ADMIN, "Europe/Paris", [1, 2])
    assert row.next_fire_at is not None  # computed by store.save_schedule


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"cron": "0 25 * * *"}, "cron", "is not valid"),
        ({"timezone": "Europe/Pari"}, "timezone", "Unknown time zone 'Europe/Pari'"),
        ({"task": "tests.jobs.tasks.nope"}, "task", "cannot be imported"),
        ({"args": '{"a": 1}'}, "args", "JSON list"),
        ({"interval": "00:10:00"}, None, "either a cron expression or an interval"),
        ({"cron": ""}, None, "either a cron expression or an interval"),
    ],
)
def test_the_change_form_names_each_problem(admin_client_, fields, field, message):
    response = admin_client_.post(ADD, form_data(**fields))
    assert response.status_code == 200
    form = response.context["adminform"].form
    errors = form.errors.get(field or "__all__")
    assert errors and message in " ".join(errors), form.errors
    assert not Schedule.objects.exists()


def test_a_code_schedule_shows_its_definition_read_only(admin_client_):
    store.sync_schedules([make_spec("declared", TASK, cron="0 * * * *", args=[1, 1])])
    row = Schedule.objects.get(name="declared")
    url = reverse("admin:dispatch_jobs_schedule_change", args=[row.pk])
    form = admin_client_.get(url).context["adminform"].form
    assert set(form.fields) == {"enabled"}
    admin_client_.post(url, {"enabled": ""})
    row.refresh_from_db()
    assert (row.enabled, row.cron) == (False, "0 * * * *")


def test_enable_and_disable_need_the_toggle_permission():
    row = schedule()
    viewer = client_with("view_schedule", "change_schedule")
    choose(viewer, "disable_schedules", [row])
    row.refresh_from_db()
    assert row.enabled  # the action is not offered without toggle_schedule
    toggler = client_with("view_schedule", "toggle_schedule")
    response = choose(toggler, "disable_schedules", [row])
    assert "1 schedule(s) disabled." in response.content.decode()
    row.refresh_from_db()
    assert not row.enabled
    choose(toggler, "enable_schedules", [row])
    row.refresh_from_db()
    assert row.enabled


def test_run_now_needs_the_run_permission_and_enqueues_one_job():
    row = schedule()
    choose(client_with("view_schedule", "toggle_schedule"), "run_schedules_now", [row])
    assert not Job.objects.exists()
    response = choose(client_with("view_schedule", "run_schedule"), "run_schedules_now", [row])
    job = Job.objects.get()
    assert f"job #{job.pk} enqueued" in response.content.decode()
    assert (job.name, job.args) == (TASK, [1, 2])


def test_run_now_reports_a_schedule_that_cannot_run(admin_client_):
    row = schedule(args=[1, 2, 3, 4])
    response = choose(admin_client_, "run_schedules_now", [row])
    assert "could not run" in response.content.decode()
    assert not Job.objects.exists()


def test_an_interval_schedule_shows_its_period(admin_client_):
    schedule("every", cron="", interval=timedelta(minutes=10))
    assert "every 10 min" in admin_client_.get(LIST).content.decode()
