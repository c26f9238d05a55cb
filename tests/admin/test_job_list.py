"""The job change list: keyset pages, bounded counts, filters, search."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from dispatch_jobs import store
from dispatch_jobs.admin.paging import CURSOR_SALT
from dispatch_jobs.cursor import encode_cursor
from dispatch_jobs.models import Job

from . import builders

pytestmark = pytest.mark.django_db
URL = reverse("admin:dispatch_jobs_job_changelist")


def _ids(response) -> list[int]:
    assert response.status_code == 200, response.content[:500]
    return [job.pk for job in response.context["cl"].result_list]


def _messages(response) -> list[str]:
    return [str(m) for m in response.context["messages"]]


@pytest.mark.parametrize(
    "query",
    [
        "",
        "?state=failed",
        "?queue=default&sort=-priority",
        "?sort=-completed_at&finished=24h",
        "?task=tests.jobs.tasks.noop&enqueued=1h&priority=high",
        "?q=tests.jobs",
    ],
)
def test_no_count_and_no_offset_reach_the_database(admin_client_, query):
    builders.enqueue(30, priority=1)
    builders.failed(3)
    builders.completed(3)
    with override_settings(DISPATCH_JOBS={"LIST_PAGE_SIZE": 5}):
        first = admin_client_.get(URL + query)
        next_link = first.context["cl"].next_link
        with CaptureQueriesContext(connection) as captured:
            response = admin_client_.get(URL + (next_link or query))
    assert response.status_code == 200
    sql = "\n".join(q["sql"].upper() for q in captured.captured_queries)
    assert "COUNT(" not in sql
    assert not re.search(r"\bOFFSET\b", sql)
    assert "DISTINCT" not in sql


@pytest.mark.parametrize("sort", ["-priority", "id", "-completed_at"])
def test_paging_2000_jobs_with_ties_sees_each_exactly_once(admin_client_, sort):
    # Three interleaved priorities: ~667 rows share each sort value.
    store.enqueue_jobs(
        [Job(name="tests.jobs.tasks.noop", queue="default", priority=i % 3) for i in range(2000)]
    )
    if sort == "-completed_at":
        # Every row finished at the very same instant: one tie across all 2,000. (A
        # test-only UPDATE: no store path backdates a finish time.)
        stamp = Job.objects.order_by("id").values_list("created_at", flat=True).first()
        Job.objects.update(completed_at=stamp)
    expected = set(Job.objects.values_list("id", flat=True))
    seen: list[int] = []
    pages = []
    with override_settings(DISPATCH_JOBS={"LIST_PAGE_SIZE": 200}):
        link = f"?sort={sort}"
        while link:
            response = admin_client_.get(URL + link)
            page = _ids(response)
            pages.append((link, page))
            seen += page
            link = response.context["cl"].next_link
        assert len(seen) == len(expected) == 2000
        assert set(seen) == expected
        # And back again from the last page: the same pages, in reverse.
        link = response.context["cl"].previous_link
        back = [page for _, page in pages[:-1]]
        while link:
            response = admin_client_.get(URL + link)
            assert _ids(response) == back.pop()
            link = response.context["cl"].previous_link
        assert back == []


@pytest.mark.parametrize("sort", ["-id", "id", "-priority"])
def test_paging_a_list_read_apart_sees_each_exactly_once(admin_client_, sort):
    """A queue filter on PostgreSQL reads waiting, running and finished jobs apart
    (store.reads.first_rows): pages through all of them, both ways, see each job
    once, in the order one read of the whole would give."""
    store.enqueue_jobs(
        [Job(name="tests.jobs.tasks.noop", queue="default", priority=i % 3) for i in range(600)]
    )
    store.enqueue_jobs([Job(name="tests.jobs.tasks.noop", queue="other") for _ in range(50)])
    states = ["pending", "running", "completed", "failed", "retrying", "cancelled"]
    ids = list(Job.objects.order_by("id").values_list("id", flat=True))
    for n, state in enumerate(states):  # test-only UPDATEs: interleave the states by id
        Job.objects.filter(id__in=ids[n :: len(states)]).update(state=state)
    ordering = {"-id": ["-id"], "id": ["id"], "-priority": ["-priority", "-id"]}[sort]
    expected = list(
        Job.objects.filter(queue="default").order_by(*ordering).values_list("id", flat=True)
    )
    pages = []
    with override_settings(DISPATCH_JOBS={"LIST_PAGE_SIZE": 70}):
        link = f"?queue=default&sort={sort}"
        while link:
            response = admin_client_.get(URL + link)
            pages.append(_ids(response))
            link = response.context["cl"].next_link
        assert [job_id for page in pages for job_id in page] == expected
        link = response.context["cl"].previous_link
        back = pages[:-1]
        while link:
            response = admin_client_.get(URL + link)
            assert _ids(response) == back.pop()
            link = response.context["cl"].previous_link
        assert back == []


def test_first_page_has_no_previous_and_first_links_back(admin_client_):
    builders.enqueue(12)
    with override_settings(DISPATCH_JOBS={"LIST_PAGE_SIZE": 5}):
        first = admin_client_.get(URL)
        cl = first.context["cl"]
        assert cl.previous_link == "" and cl.next_link
        second = admin_client_.get(URL + cl.next_link)
        assert second.context["cl"].previous_link
        assert b"First" in second.content
        assert _ids(admin_client_.get(URL + second.context["cl"].first_link)) == _ids(first)


@pytest.mark.parametrize(
    "cursor",
    [
        "garbage",
        "a.b.c",
        encode_cursor(["-id", "a", None, 5], "store.list_jobs"),  # another list's cursor
        encode_cursor(["-priority", "a", 1, 5], CURSOR_SALT),  # another sort order
        encode_cursor(["-id", "x", None, 5], CURSOR_SALT),  # no direction
        encode_cursor(["-id", "a", None, "1 OR 1=1"], CURSOR_SALT),  # not an id
        encode_cursor(["-completed_at", "a", 5, 5], CURSOR_SALT) + "0",  # tampered
    ],
)
def test_a_bad_cursor_is_a_message_and_the_first_page(admin_client_, cursor):
    jobs = builders.enqueue(3)
    response = admin_client_.get(URL, {"cursor": cursor})
    assert _ids(response) == sorted((j.pk for j in jobs), reverse=True)
    assert any("not valid" in m for m in _messages(response))


def test_counts_are_exact_under_the_threshold_and_capped_above(admin_client_):
    builders.enqueue(7)
    with override_settings(DISPATCH_JOBS={"ADMIN_COUNT_THRESHOLD": 10}):
        response = admin_client_.get(URL)
        assert response.context["cl"].count_label == "7"
        assert b"count exactly" not in response.content
    with override_settings(DISPATCH_JOBS={"ADMIN_COUNT_THRESHOLD": 5}):
        response = admin_client_.get(URL)
        cl = response.context["cl"]
        assert cl.count_label == "5+" and cl.count_capped
        assert b"5+ jobs" in response.content
        with CaptureQueriesContext(connection) as captured:
            exact = admin_client_.get(URL + cl.exact_count_link)
        assert exact.context["cl"].count_label == "7"
        assert any("COUNT(" in q["sql"].upper() for q in captured.captured_queries)


def test_filters_narrow_the_list(admin_client_):
    pending = builders.enqueue(2, name="app.tasks.a", queue="mail", priority=5)
    failed = builders.failed(1, name="app.tasks.b", scope_app_id="app1", scope_org_id="org9")
    done = builders.completed(1, name="app.tasks.c", priority=-3)
    held = builders.running(1, name="app.tasks.d")
    cases = {
        "state=failed": failed,
        "state=pending": pending,
        "queue=mail": pending,
        "task=app.tasks.c": done,
        "priority=high": pending,
        "priority=low": done,
        "app=app1": failed,
        "org=org9": failed,
        # finished rows keep the worker that ran them last
        f"worker={builders.WORKER}": failed + done + held,
        "finished=24h": failed + done,
        "enqueued=1h": pending + failed + done + held,
        "enqueued=older": [],
        "finished=older": [],
        "state=nonsense": pending + failed + done + held,  # unknown choice: no filter
    }
    for query, expected in cases.items():
        got = _ids(admin_client_.get(f"{URL}?{query}"))
        assert sorted(got) == sorted(j.pk for j in expected), query


def test_filter_choices_do_not_read_the_jobs_table(admin_client_):
    builders.enqueue(3)
    with CaptureQueriesContext(connection) as captured:
        admin_client_.get(URL)
    job_queries = [q["sql"] for q in captured.captured_queries if "dispatch_jobs_job" in q["sql"]]
    # The page itself and the bounded count probe, nothing for the filters.
    assert len(job_queries) == 2, job_queries


def test_unknown_lookups_are_refused(admin_client_):
    response = admin_client_.get(URL + "?payload__icontains=x")
    assert response.status_code == 400


def test_search_by_id_opens_the_job(admin_client_):
    a = builders.enqueue(1, name="billing.tasks.charge")[0]
    b = builders.enqueue(1, name="mail.tasks.send")[0]
    change = "admin:dispatch_jobs_job_change"
    assert admin_client_.get(URL, {"q": f"#{a.pk}"}).url == reverse(change, args=[a.pk])
    assert admin_client_.get(URL, {"q": f" {b.pk} "}).url == reverse(change, args=[b.pk])
    for missing in (f"#{b.pk + 100}", "#" + "9" * 30, "#-1"):
        response = admin_client_.get(URL, {"q": missing})
        assert _ids(response) == [], missing
        assert any("no job" in m for m in _messages(response)), missing


def test_search_finds_a_substring_of_the_task_name(admin_client_):
    a = builders.enqueue(1, name="billing.tasks.charge_card")[0]
    b = builders.enqueue(1, name="mail.tasks.send")[0]
    assert _ids(admin_client_.get(URL, {"q": "billing."})) == [a.pk]
    assert _ids(admin_client_.get(URL, {"q": "charge_card"})) == [a.pk]
    assert _ids(admin_client_.get(URL, {"q": "TASKS"})) == [b.pk, a.pk]  # any case
    assert _ids(admin_client_.get(URL, {"q": "50%"})) == []  # LIKE wildcards are literal


def test_argument_search(admin_client_):
    a = builders.enqueue(1, payload={"args": [7, "x"], "kwargs": {"user_id": 42}})[0]
    builders.enqueue(1, payload={"args": [8], "kwargs": {"user_id": 43}})
    response = admin_client_.get(URL, {"q": '{"user_id": 42}'})
    if connection.vendor != "postgresql":
        assert _ids(response) == []
        assert any("needs PostgreSQL" in m for m in _messages(response))
        return
    assert _ids(response) == [a.pk]
    assert _ids(admin_client_.get(URL, {"q": "[7]"})) == [a.pk]
    assert _ids(admin_client_.get(URL, {"q": '{"kwargs": {"user_id": 43}}'})) != [a.pk]
    bad = admin_client_.get(URL, {"q": "{oops"})
    assert _ids(bad) == [] and any("not valid JSON" in m for m in _messages(bad))


def test_column_sorting_is_not_offered(admin_client_):
    builders.enqueue(3)
    response = admin_client_.get(URL + "?o=3")  # ?o= is ignored: only whitelisted keys
    assert _ids(response) == sorted(_ids(response), reverse=True)
    assert b'class="sortable' not in response.content


def test_the_list_takes_a_constant_handful_of_queries(admin_client_):
    """Session, user, one small-table read for the filters (queues, workers and
    the rollup's known task names in one UNION), the page and the count probe:
    five, however many jobs or pages."""
    counts = []
    for batch in (5, 300):
        builders.enqueue(batch)
        with override_settings(DISPATCH_JOBS={"LIST_PAGE_SIZE": 20}):
            first = admin_client_.get(URL)
            for link in ("", first.context["cl"].next_link):
                with CaptureQueriesContext(connection) as captured:
                    admin_client_.get(URL + link)
                counts.append(len([q for q in captured.captured_queries if _is_read(q["sql"])]))
    assert counts == [5, 5, 5, 5], counts


def _is_read(sql: str) -> bool:
    """A real query, not transaction control or PostgreSQL's timeout setting."""
    # A UNION starts with "(SELECT" on PostgreSQL and MariaDB.
    return sql.lstrip("(").startswith("SELECT") and "set_config" not in sql
