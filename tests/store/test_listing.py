"""The cursor-paged list (the seed's Lister): order, filters, cursors."""

from __future__ import annotations

import pytest
from django.test import override_settings

from dispatch_jobs import store
from dispatch_jobs.cursor import encode_cursor
from dispatch_jobs.exceptions import InvalidCursor
from dispatch_jobs.models import JobState
from dispatch_jobs.store import ListOptions
from dispatch_jobs.store.listing import CURSOR_SALT
from tests.factories import JobFactory
from tests.store.support import ids

pytestmark = pytest.mark.django_db


def page(**opts: object) -> store.Page:
    return store.list_jobs(ListOptions(**opts))  # type: ignore[arg-type]


def test_newest_first() -> None:
    jobs = [JobFactory.create() for _ in range(3)]
    result = page()
    assert ids(result.jobs) == ids(jobs)[::-1]
    assert result.next_cursor == "" and result.complete is True


def test_filter_by_states() -> None:
    JobFactory.create()
    done = JobFactory.create(state=JobState.COMPLETED)
    failed = JobFactory.create(state=JobState.FAILED)
    assert ids(page(states=[JobState.COMPLETED, JobState.FAILED]).jobs) == [failed.pk, done.pk]


def test_filter_by_queue() -> None:
    JobFactory.create(queue="a")
    b = JobFactory.create(queue="b")
    assert ids(page(queue="b").jobs) == [b.pk]


def test_name_prefix_matches_the_start_only() -> None:
    hit = JobFactory.create(name="app.tasks.send")
    JobFactory.create(name="other.app.tasks.send")
    assert ids(page(name_prefix="app.tasks").jobs) == [hit.pk]


def test_name_prefix_is_case_sensitive() -> None:
    lower = JobFactory.create(name="tests.a")
    upper = JobFactory.create(name="Tests.a")
    assert ids(page(name_prefix="Tests.").jobs) == [upper.pk]
    assert ids(page(name_prefix="tests.").jobs) == [lower.pk]


@pytest.mark.parametrize(("prefix", "literal"), [("a%", "a%x"), ("a_", "a_x")])
def test_name_prefix_wildcards_are_ordinary_characters(prefix: str, literal: str) -> None:
    hit = JobFactory.create(name=literal)
    JobFactory.create(name="abx")  # would match if % or _ were wildcards
    assert ids(page(name_prefix=prefix).jobs) == [hit.pk]


def test_name_prefix_backslash_is_literal() -> None:
    hit = JobFactory.create(name="a\\b")
    JobFactory.create(name="ab")
    assert ids(page(name_prefix="a\\").jobs) == [hit.pk]


def test_scope_filters() -> None:
    a1 = JobFactory.create(scope_app_id="app1", scope_org_id="org1")
    a2 = JobFactory.create(scope_app_id="app1", scope_org_id="org2")
    b1 = JobFactory.create(scope_app_id="app2", scope_org_id="org1")
    assert ids(page(scope_app_id="app1").jobs) == [a2.pk, a1.pk]
    assert ids(page(scope_org_id="org1").jobs) == [b1.pk, a1.pk]
    assert ids(page(scope_app_id="app1", scope_org_id="org1").jobs) == [a1.pk]


def test_empty_scope_means_every_tenant() -> None:
    jobs = [JobFactory.create(scope_app_id=app) for app in ("", "app1", "app2")]
    assert sorted(ids(page(scope_app_id="", scope_org_id="").jobs)) == sorted(ids(jobs))


def test_filters_combine() -> None:
    hit = JobFactory.create(queue="q", name="x.y", state=JobState.FAILED, scope_org_id="o")
    JobFactory.create(queue="q", name="x.y", state=JobState.FAILED)
    JobFactory.create(queue="q", name="z.y", state=JobState.FAILED, scope_org_id="o")
    opts = dict(states=[JobState.FAILED], queue="q", name_prefix="x.", scope_org_id="o")
    assert ids(page(**opts).jobs) == [hit.pk]


def test_cursor_pages_through_every_row_once() -> None:
    """Rows made in one INSERT share created_at: the id cursor still has no ties."""
    jobs = JobFactory.create_batch_enqueued(23)
    seen: list[int] = []
    cursor = ""
    pages = 0
    while True:
        result = page(limit=5, cursor=cursor)
        assert result.complete is True
        seen += ids(result.jobs)
        pages += 1
        if not result.next_cursor:
            break
        cursor = result.next_cursor
    assert seen == sorted(ids(jobs), reverse=True)
    assert pages == 5


def test_no_next_cursor_when_the_page_ends_exactly() -> None:
    JobFactory.create_batch_enqueued(4)
    first = page(limit=2)
    assert first.next_cursor
    second = page(limit=2, cursor=first.next_cursor)
    assert len(second.jobs) == 2 and second.next_cursor == ""


def test_cursor_keeps_its_filters_position_when_rows_arrive() -> None:
    JobFactory.create_batch_enqueued(3)
    first = page(limit=2)
    JobFactory.create()  # newer than the cursor: not on later pages
    rest = page(limit=2, cursor=first.next_cursor)
    assert len(rest.jobs) == 1


def test_default_page_size_is_50() -> None:
    JobFactory.create_batch_enqueued(51)
    result = page()
    assert len(result.jobs) == 50 and result.next_cursor


@override_settings(DISPATCH_JOBS={"LIST_PAGE_SIZE": 3})
def test_page_size_setting() -> None:
    JobFactory.create_batch_enqueued(4)
    assert len(page().jobs) == 3
    assert len(page(limit=-1).jobs) == 3


@pytest.mark.parametrize(
    "cursor",
    ["garbage", "a.b.c", "eyJ4IjoxfQ", ".", "!!!.0123456789abcdef"],
)
def test_malformed_cursor_is_refused(cursor: str) -> None:
    JobFactory.create()
    with pytest.raises(InvalidCursor, match="Invalid cursor"):
        page(cursor=cursor)


def test_tampered_cursor_is_refused() -> None:
    JobFactory.create_batch_enqueued(3)
    good = page(limit=1).next_cursor
    body, mac = good.split(".")
    forged_body = encode_cursor([10**9], CURSOR_SALT).split(".")[0]
    for tampered in (f"{forged_body}.{mac}", f"{body}.{mac[:-1]}{'0' if mac[-1] != '0' else '1'}"):
        with pytest.raises(InvalidCursor, match="signature"):
            page(cursor=tampered)


def test_foreign_cursor_is_refused() -> None:
    """A cursor signed for another list (another salt) is not a position here."""
    JobFactory.create()
    with pytest.raises(InvalidCursor, match="signature"):
        page(cursor=encode_cursor([1], "admin.some_other_list"))


def test_signed_cursor_without_a_job_position_is_refused() -> None:
    JobFactory.create()
    for position in ([], ["x"], [1, 2], [True]):
        with pytest.raises(InvalidCursor, match="position"):
            page(cursor=encode_cursor(position, CURSOR_SALT))
