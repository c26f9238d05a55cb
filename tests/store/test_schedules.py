"""Periodic schedules in the store and the scheduler: sync without clobbering the
operator's enabled flag, one job per tick, missed-tick policies, enable and run
now, and the errors a schedule keeps instead of crashing maintenance."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.db import transaction
from django.test import override_settings

from dispatch_jobs import scheduler, schedules, store
from dispatch_jobs.exceptions import InvalidSchedule
from dispatch_jobs.models import Job, Schedule, ScheduleSource, ScheduleTick
from dispatch_jobs.schedules import make_spec
from dispatch_jobs.ticks import MissedTicks, next_tick
from tests.store.support import db_now
from tests.stored_json import set_json_text

pytestmark = pytest.mark.django_db

ADD = "tests.jobs.tasks.add"
MINUTE = timedelta(minutes=1)


def schedule(name: str = "adder", **fields) -> Schedule:
    values = {"task": ADD, "interval": MINUTE, "args": [1, 2], **fields}
    return store.save_schedule(Schedule(name=name, **values))


def overdue(row: Schedule, ticks: int) -> Schedule:
    """Put the schedule's next fire ``ticks`` intervals before its latest due tick."""
    due = next_tick("", row.interval, "UTC", db_now() - row.interval * (ticks + 1))
    Schedule.objects.filter(pk=row.pk).update(next_fire_at=due)
    row.refresh_from_db()
    return row


def clear_of_the_latest_tick(margin: float = 2.0) -> None:
    """Wait until the database's clock is at least ``margin`` seconds from a minute
    tick on either side: a tick due within the grace always fires, whatever the
    missed-tick policy, and a tick falling due mid-test fires one more job."""
    now = db_now()
    since = (now - now.replace(second=0, microsecond=0)).total_seconds()
    if since < margin:
        time.sleep(margin - since)
    elif since > 60 - margin:
        time.sleep(60 - since + margin)


# --- sync -------------------------------------------------------------------------


def test_sync_creates_declared_schedules_and_keeps_the_operators_enabled_flag():
    spec = make_spec("nightly", ADD, cron="0 2 * * *", timezone="Europe/Paris", args=[1, 2])
    report = store.sync_schedules([spec])
    assert report.created == ["nightly"]
    row = Schedule.objects.get(name="nightly")
    assert (row.enabled, row.source, row.cron, row.timezone) == (
        True,
        ScheduleSource.CODE,
        "0 2 * * *",
        "Europe/Paris",
    )
    assert row.next_fire_at is not None and row.next_fire_at > db_now()

    store.set_schedules_enabled([row.pk], False)  # the operator disables it
    changed = make_spec("nightly", ADD, cron="0 3 * * *", timezone="Europe/Paris", args=[5, 6])
    report = store.sync_schedules([changed])
    assert report.updated == ["nightly"] and report.created == []
    row.refresh_from_db()
    assert row.enabled is False  # kept across the deploy
    assert (row.cron, row.args) == ("0 3 * * *", [5, 6])


def test_sync_does_not_enable_a_schedule_the_operator_disabled_even_if_declared_enabled():
    store.sync_schedules([make_spec("s", ADD, every=MINUTE, enabled=True)])
    store.set_schedules_enabled(list(Schedule.objects.values_list("pk", flat=True)), False)
    store.sync_schedules([make_spec("s", ADD, every=MINUTE, enabled=True)])
    assert Schedule.objects.get(name="s").enabled is False


def test_a_new_schedule_declared_disabled_starts_disabled():
    store.sync_schedules([make_spec("off", ADD, every=MINUTE, enabled=False)])
    assert Schedule.objects.get(name="off").enabled is False


def test_sync_reports_code_schedules_no_longer_declared_and_leaves_them():
    store.sync_schedules([make_spec("old", ADD, every=MINUTE)])
    report = store.sync_schedules([])
    assert report.undeclared == ["old"]
    assert Schedule.objects.filter(name="old").exists()


def test_periodic_decorator_and_settings_entries_are_declared(monkeypatch):
    monkeypatch.setattr(schedules, "_declared", {})
    from tests.jobs.tasks import add

    assert schedules.periodic(cron="*/5 * * * *", timezone="Europe/Paris", args=[1, 1])(add) is add
    entries = {"hourly": {"task": ADD, "every": timedelta(hours=1), "kwargs": {"a": 1, "b": 2}}}
    with override_settings(DISPATCH_JOBS={"SCHEDULES": entries}):
        report = scheduler.sync_declared_schedules()
    assert sorted(report.created) == ["hourly", ADD]
    decorated = Schedule.objects.get(name=ADD)
    assert (decorated.cron, decorated.timezone, decorated.args) == (
        "*/5 * * * *",
        "Europe/Paris",
        [1, 1],
    )
    assert Schedule.objects.get(name="hourly").interval == timedelta(hours=1)


def test_bad_declarations_are_refused_naming_the_schedule():
    with pytest.raises(InvalidSchedule, match="'x': give exactly one of cron= and every="):
        make_spec("x", ADD)
    with pytest.raises(InvalidSchedule, match="'x': .*Unknown time zone 'Mars/Olympus'"):
        make_spec("x", ADD, cron="* * * * *", timezone="Mars/Olympus")
    with pytest.raises(InvalidSchedule, match="'x': .*not valid"):
        make_spec("x", ADD, cron="* * 32 * *")
    with pytest.raises(InvalidSchedule, match="put it above @task"):
        schedules.periodic(every=MINUTE)(lambda: None)
    with (
        override_settings(
            DISPATCH_JOBS={"SCHEDULES": {"y": {"task": ADD, "cron": "* * * * *", "oops": 1}}}
        ),
        pytest.raises(InvalidSchedule, match="'y': unknown option 'oops'"),
    ):
        schedules.settings_schedules()


# --- firing -----------------------------------------------------------------------


def test_a_tick_fires_once_however_often_it_is_fired():
    row = schedule()
    tick = row.next_fire_at
    following = next_tick("", MINUTE, "UTC", tick)
    first = store.fire_schedule_tick(row, tick, scheduler.job_for(row), following)
    second = store.fire_schedule_tick(row, tick, scheduler.job_for(row), following)
    assert first is not None and second is None
    assert list(Job.objects.values_list("pk", "name", "payload")) == [
        (first.pk, ADD, {"args": [1, 2], "kwargs": {}})
    ]
    assert list(ScheduleTick.objects.values_list("tick", "job_id")) == [(tick, first.pk)]
    row.refresh_from_db()
    assert (row.last_tick_at, row.last_job_id, row.next_fire_at) == (tick, first.pk, following)


def test_a_refused_tick_leaves_the_callers_transaction_usable():
    row = schedule()
    tick = row.next_fire_at
    store.fire_schedule_tick(row, tick, scheduler.job_for(row), tick + MINUTE)
    with transaction.atomic():
        assert store.fire_schedule_tick(row, tick, scheduler.job_for(row), tick + MINUTE) is None
        # The savepoint took the key's refusal: this transaction still writes.
        extra = store.enqueue_job(Job(name=ADD, payload={"args": [0, 0], "kwargs": {}}))
    assert Job.objects.filter(pk=extra.pk).exists()
    assert Job.objects.count() == 2


def test_next_fire_never_moves_back():
    row = schedule()
    later = row.next_fire_at + 10 * MINUTE
    store.advance_schedule(row.pk, later)
    store.advance_schedule(row.pk, row.next_fire_at)
    row.refresh_from_db()
    assert row.next_fire_at == later


def test_a_due_tick_fires_with_the_schedules_queue_and_priority():
    clear_of_the_latest_tick()  # the next tick must not fall due mid-test
    row = overdue(schedule(queue="high", priority=7), 0)
    assert scheduler.fire_due_schedules() == 1
    job = Job.objects.get()
    assert (job.queue, job.priority, job.args) == ("high", 7, [1, 2])
    row.refresh_from_db()
    assert row.next_fire_at > db_now()
    assert scheduler.fire_due_schedules() == 0  # not due again before its next tick


def test_missed_ticks_fire_once_for_the_latest_under_the_latest_policy():
    row = overdue(schedule(missed=MissedTicks.LATEST), 5)
    assert scheduler.fire_due_schedules(grace=timedelta(seconds=1)) == 1
    fired = ScheduleTick.objects.get()
    assert fired.tick > row.next_fire_at + 3 * MINUTE  # the latest of the six, not the first
    assert Job.objects.count() == 1


def test_missed_ticks_fire_nothing_under_the_skip_policy():
    clear_of_the_latest_tick()
    row = overdue(schedule(missed=MissedTicks.SKIP), 5)
    assert scheduler.fire_due_schedules(grace=timedelta(seconds=1)) == 0
    assert not Job.objects.exists() and not ScheduleTick.objects.exists()
    row.refresh_from_db()
    assert row.next_fire_at > db_now()


def test_a_tick_within_the_grace_fires_under_either_policy():
    for name, missed in (("a", MissedTicks.SKIP), ("b", MissedTicks.LATEST)):
        overdue(schedule(name, missed=missed), 0)
    assert scheduler.fire_due_schedules(grace=timedelta(minutes=5)) == 2


def test_disabled_schedules_do_not_fire_and_enabling_does_not_count_the_sleep_as_missed():
    clear_of_the_latest_tick()  # the next tick must not fall due mid-test
    row = overdue(schedule(), 30)
    store.set_schedules_enabled([row.pk], False)
    assert scheduler.fire_due_schedules() == 0
    store.set_schedules_enabled([row.pk], True)
    row.refresh_from_db()
    assert row.next_fire_at > db_now()
    assert scheduler.fire_due_schedules() == 0


def test_a_schedule_whose_task_is_gone_keeps_the_error_and_moves_on():
    row = overdue(schedule(task="tests.jobs.tasks.no_such_task"), 0)
    assert scheduler.fire_due_schedules() == 0
    row.refresh_from_db()
    assert "cannot be imported" in row.last_error
    assert row.next_fire_at > db_now()
    assert not Job.objects.exists()


def test_arguments_the_task_refuses_are_the_schedules_error():
    row = overdue(schedule(args=[1, 2, 3, 4]), 0)
    assert scheduler.fire_due_schedules() == 0
    row.refresh_from_db()
    assert row.last_error


def test_run_now_enqueues_outside_the_ticks():
    row = schedule()
    job = scheduler.run_now(row)
    row.refresh_from_db()
    assert row.last_job_id == job.pk and row.last_fired_at is not None
    assert not ScheduleTick.objects.exists()
    assert row.next_fire_at > db_now()


def test_old_fired_ticks_are_purged():
    row = overdue(schedule(), 0)
    scheduler.fire_due_schedules()
    assert store.purge_schedule_ticks(db_now(-timedelta(hours=1)), 100) == 0
    assert store.purge_schedule_ticks(db_now(timedelta(seconds=5)), 100) == 1
    assert Schedule.objects.filter(pk=row.pk).exists()


def test_an_operators_save_does_not_undo_a_tick_fired_meanwhile():
    row = overdue(schedule(), 0)
    stale = Schedule.objects.get(pk=row.pk)  # the admin's form loaded it
    assert scheduler.fire_due_schedules() == 1
    fired = Schedule.objects.get(pk=row.pk)
    stale.queue = "high"
    store.save_schedule(stale)
    row.refresh_from_db()
    assert row.queue == "high"
    assert (row.last_job_id, row.last_tick_at, row.next_fire_at) == (
        fired.last_job_id,
        fired.last_tick_at,
        fired.next_fire_at,
    )


@pytest.mark.parametrize("column, stored", [("args", '"12"'), ("args", "5"), ("kwargs", "[1]")])
def test_stored_arguments_that_are_not_a_call_are_the_schedules_error(column, stored):
    """Args that are not a list (a string is not taken letter by letter) or kwargs
    that are not an object, as a row written elsewhere may hold: no job, the
    error kept on the schedule, the schedule moved on."""
    row = overdue(schedule(), 0)
    assert set_json_text(Schedule, row.pk, column, stored)
    assert scheduler.fire_due_schedules() == 0
    row.refresh_from_db()
    assert "its stored args must be a list and its kwargs an object" in row.last_error
    assert row.next_fire_at > db_now()
    assert not Job.objects.exists()
