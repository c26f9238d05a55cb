"""Admin list queries run under a statement timeout on PostgreSQL; a query that
runs too long becomes a friendly message, not an error page or a pinned database."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test import override_settings
from django.urls import reverse

from dispatch_jobs.admin.safety import bounded_queries
from dispatch_jobs.exceptions import QueryTooBroad

from . import builders
from .locks import held_elsewhere

NOT_POSTGRES = (
    "statement timeouts are PostgreSQL's: SQLite has none, and MariaDB's "
    "max_statement_time does not cover lock waits, so the admin does not set one there"
)


def _statement_timeout() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW statement_timeout")
        return cursor.fetchone()[0]


@pytest.mark.django_db
def test_a_slow_query_becomes_query_too_broad_and_the_timeout_does_not_leak():
    if connection.vendor != "postgresql":
        pytest.skip(NOT_POSTGRES)
    before = _statement_timeout()
    fast = override_settings(DISPATCH_JOBS={"ADMIN_STATEMENT_TIMEOUT": timedelta(milliseconds=50)})
    with fast, pytest.raises(QueryTooBroad, match="Narrow the filter"):  # noqa: SIM117
        with bounded_queries(), connection.cursor() as cursor:
            cursor.execute("SELECT pg_sleep(5)")
    assert _statement_timeout() == before
    with bounded_queries(), connection.cursor() as cursor:
        cursor.execute("SELECT 1")  # fast queries pass through untouched


@pytest.mark.django_db
def test_elsewhere_bounded_queries_changes_nothing():
    if connection.vendor == "postgresql":
        pytest.skip("PostgreSQL is covered by the timeout tests")
    with bounded_queries(), connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        assert cursor.fetchone()[0] == 1


@pytest.mark.django_db(transaction=True)
def test_a_job_list_that_cannot_answer_in_time_shows_a_friendly_message(admin_client_):
    if connection.vendor != "postgresql":
        pytest.skip(NOT_POSTGRES)
    builders.enqueue(3)

    def hold_the_table() -> None:
        # Stands in for a query that would take minutes: the list's SELECT waits on
        # this lock until the statement timeout cancels it.
        with connection.cursor() as cursor:
            cursor.execute("LOCK TABLE dispatch_jobs_job IN ACCESS EXCLUSIVE MODE")

    with (
        held_elsewhere(hold_the_table),
        override_settings(DISPATCH_JOBS={"ADMIN_STATEMENT_TIMEOUT": timedelta(milliseconds=200)}),
    ):
        response = admin_client_.get(reverse("admin:dispatch_jobs_job_changelist"))
        queues = admin_client_.get(reverse("admin:dispatch_jobs_queuecontrol_changelist"))
    assert response.status_code == 200
    assert "Narrow the filter" in response.content.decode()
    assert list(response.context["cl"].result_list) == []
    assert queues.status_code == 200 and "Narrow the filter" in queues.content.decode()


@pytest.mark.django_db(transaction=True)
def test_a_group_retry_that_cannot_answer_in_time_says_narrow_the_filter(admin_client_):
    if connection.vendor != "postgresql":
        pytest.skip(NOT_POSTGRES)
    builders.failed(2, name="app.a", error="ValueError: bad")

    def hold_the_table() -> None:
        with connection.cursor() as cursor:
            cursor.execute("LOCK TABLE dispatch_jobs_job IN ACCESS EXCLUSIVE MODE")

    retry = reverse("admin:dispatch_jobs_job_deadletter_retry")
    with (
        held_elsewhere(hold_the_table),
        override_settings(DISPATCH_JOBS={"ADMIN_STATEMENT_TIMEOUT": timedelta(milliseconds=200)}),
    ):
        response = admin_client_.get(retry, {"task": "app.a", "error": "ValueError"})
    assert response.status_code == 302
    shown = admin_client_.get(response.url)
    assert "Narrow the filter" in shown.content.decode()
