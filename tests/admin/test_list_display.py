"""The job list at a glance: state badges, the error column, attempts made of
allowed, the known task names offered by the task filter, one date format,
human durations."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.urls import reverse

from dispatch_jobs import store
from dispatch_jobs.admin import display
from dispatch_jobs.models import Job, JobState

from . import builders

pytestmark = pytest.mark.django_db
URL = reverse("admin:dispatch_jobs_job_changelist")


def _rows(client, query: str = "") -> dict[int, str]:
    """Each row's HTML by job id."""
    page = client.get(URL + query).content.decode()
    rows = re.findall(r"<tr>(.*?)</tr>", page, re.S)
    found = {}
    for row in rows:
        match = re.search(r'name="_selected_action" value="(\d+)"', row)
        if match:
            found[int(match.group(1))] = row
    return found


def _cell(row: str, field: str) -> str:
    match = re.search(rf'class="field-{field}[^"]*">(.*?)</t[dh]>', row, re.S)
    assert match, field
    return re.sub(r"<[^>]+>", "", match.group(1)).strip()


def test_states_are_badges_and_failures_show_their_error(admin_client_):
    failed = builders.failed(
        1, name="shop.charge", error="CardDeclined: insufficient funds\nTraceback ..."
    )[0]
    done = builders.completed(1, name="shop.send")[0]
    rows = _rows(admin_client_)
    assert 'class="dj-badge dj-state-failed"' in rows[failed.pk]
    assert 'class="dj-badge dj-state-completed"' in rows[done.pk]
    assert _cell(rows[failed.pk], "error_summary") == "CardDeclined: insufficient funds"
    assert _cell(rows[done.pk], "error_summary") == display.EMPTY


def test_a_long_error_is_cut_to_one_short_line(admin_client_):
    job = builders.failed(1, error="ValueError: " + "x" * 5000)[0]
    shown = _cell(_rows(admin_client_)[job.pk], "error_summary")
    assert len(shown) == display.ERROR_SUMMARY_CHARS and shown.endswith("…")


def test_attempts_read_made_of_allowed(admin_client_):
    first_try = builders.failed(1, max_retries=4)[0]
    waiting = builders.enqueue(1, max_retries=4)[0]
    done = builders.completed(1, max_retries=0)[0]
    held = builders.running(1, max_retries=2)[0]
    rows = _rows(admin_client_)
    assert _cell(rows[first_try.pk], "attempts_made") == "1/5"
    assert _cell(rows[waiting.pk], "attempts_made") == "0/5"
    assert _cell(rows[done.pk], "attempts_made") == "1/1"
    assert _cell(rows[held.pk], "attempts_made") == "1/3"


def test_attempts_made_by_state():
    assert display.attempts_made(JobState.RETRYING, 2) == 2  # two failed, a third to come
    assert display.attempts_made(JobState.FAILED, 3) == 4  # retries exhausted
    assert display.attempts_made(JobState.CANCELLED, 0) == 0
    # Cancelled while it ran (an operator's stop request is on it): that try counts.
    assert display.attempts_made(JobState.CANCELLED, 1, stopped_running=True) == 2


def test_one_date_format_and_human_durations(admin_client_):
    job = builders.completed(1)[0]
    # Test-only: a known run time.
    Job.objects.filter(pk=job.pk).update(started_at=job.completed_at - timedelta(seconds=75))
    row = _rows(admin_client_)[job.pk]
    for field in ("enqueued", "finished"):
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", _cell(row, field)), field
    assert _cell(row, "run_time") == "1 min 15 s"


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (timedelta(microseconds=1500), "2 ms"),
        (timedelta(seconds=4, microseconds=250_000), "4.2 s"),
        (timedelta(seconds=42, microseconds=999_999), "42 s"),
        (timedelta(minutes=3, seconds=4), "3 min 4 s"),
        (timedelta(hours=2, minutes=5, seconds=9), "2 h 5 min"),
        (timedelta(days=3, hours=4), "3 d 4 h"),
        (None, "–"),
    ],
)
def test_durations_are_human(value, shown):
    assert display.duration(value) == shown


def test_the_task_filter_offers_known_names_and_matches_parts(admin_client_):
    card = builders.completed(1, name="shop.tasks.charge_card")[0]
    charge = builders.completed(1, name="shop.tasks.charge")[0]
    builders.completed(1, name="mail.tasks.send")
    store.roll_up_finished_jobs(lag=timedelta(0))
    page = admin_client_.get(URL).content.decode()
    datalist = page[page.index('<datalist id="dj-options-task">') :]
    datalist = datalist[: datalist.index("</datalist>")]
    assert re.findall(r'<option value="([^"]+)">', datalist) == [
        "mail.tasks.send",
        "shop.tasks.charge",
        "shop.tasks.charge_card",
    ]
    assert "?task=shop.tasks.charge_card" in page  # offered as a link too
    # A known name is exact; anything else is a part of the name.
    assert set(_rows(admin_client_, "?task=shop.tasks.charge")) == {charge.pk}
    assert set(_rows(admin_client_, "?task=charge")) == {charge.pk, card.pk}
    assert set(_rows(admin_client_, "?task=CHARGE_c")) == {card.pk}


def test_harmless_confirmations_are_not_styled_as_deletions(admin_client_):
    job = builders.failed(1)[0]
    action = reverse("admin:dispatch_jobs_job_action", args=["retry"])
    retry = admin_client_.get(action, {"ids": str(job.pk)}).content.decode()
    assert "delete-confirmation" not in retry
    delete = reverse("admin:dispatch_jobs_job_action", args=["delete"])
    assert "delete-confirmation" in admin_client_.get(delete, {"ids": str(job.pk)}).content.decode()
