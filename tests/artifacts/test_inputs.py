"""Declared inputs at enqueue: every rule refuses with an error naming the input,
and writes no row; a valid binding fills artifact_bindings, input_bytes and
primary_input_hash."""

from __future__ import annotations

import hashlib

import pytest

from dispatch_jobs import artifacts, store
from dispatch_jobs.compat import InvalidTask
from dispatch_jobs.exceptions import (
    ArtifactNotFound,
    InputMediaTypeRefused,
    InputTooLarge,
    InvalidInput,
    MissingInput,
    UnknownInput,
)
from dispatch_jobs.inputs import InputSpec
from dispatch_jobs.models import Artifact, Job
from dispatch_jobs.task import task
from tests.jobs import input_tasks

pytestmark = pytest.mark.django_db
WHERE = "tests.jobs.input_tasks.transcode"


def refused(call, error: type[Exception], *fragments: str) -> InvalidInput:
    before = Job.objects.count()
    with pytest.raises(error) as excinfo:
        call()
    for fragment in fragments:
        assert fragment in str(excinfo.value), f"{fragment!r} not in {excinfo.value}"
    assert Job.objects.count() == before
    return excinfo.value


@pytest.fixture
def video() -> Artifact:
    return artifacts.register(b"v" * 600, media_type="video/mp4")


def test_unknown_input_name(video):
    error = refused(
        lambda: input_tasks.transcode.using(inputs={"audio": video}).enqueue(),
        UnknownInput,
        WHERE,
        "input 'audio' is not declared",
        "declared: subtitles, video",
    )
    assert error.input == "audio"
    assert isinstance(error, InvalidTask)


def test_missing_required_input():
    error = refused(
        lambda: input_tasks.transcode.enqueue(), MissingInput, WHERE, "required input 'video'"
    )
    assert error.input == "video"


def test_optional_input_may_be_left_out(video):
    input_tasks.transcode.using(inputs={"video": video}).enqueue()
    job = Job.objects.get()
    assert set(job.artifact_bindings) == {"video"}


def test_oversize_input():
    big = artifacts.register(b"x" * 1001, media_type="video/mp4")
    error = refused(
        lambda: input_tasks.transcode.using(inputs={"video": big}).enqueue(),
        InputTooLarge,
        "input 'video' is 1001 bytes, over its max_bytes of 1000",
    )
    assert error.input == "video"


def test_wrong_media_type():
    text = artifacts.register(b"hello", media_type="text/plain")
    refused(
        lambda: input_tasks.transcode.using(inputs={"video": text}).enqueue(),
        InputMediaTypeRefused,
        "input 'video' is 'text/plain'",
        "accepted: video/*",
    )


def test_exact_media_type_of_an_optional_input(video):
    html = artifacts.register(b"<p>", media_type="text/html")
    refused(
        lambda: input_tasks.transcode.using(inputs={"video": video, "subtitles": html}).enqueue(),
        InputMediaTypeRefused,
        "input 'subtitles' is 'text/html'",
    )


def test_artifact_not_found(video):
    store.delete_artifact(video.pk)
    error = refused(
        lambda: input_tasks.transcode.using(inputs={"video": video}).enqueue(),
        ArtifactNotFound,
        f"input 'video' is bound to artifact {video.pk}, which does not exist",
    )
    assert error.input == "video"


def test_unknown_artifact_id():
    refused(
        lambda: input_tasks.transcode.using(inputs={"video": 987654321}).enqueue(),
        ArtifactNotFound,
        "artifact 987654321",
    )


def test_binding_that_is_not_an_artifact():
    refused(
        lambda: input_tasks.transcode.using(inputs={"video": "a.mp4"}).enqueue(),
        InvalidInput,
        "input 'video' must be bound to an Artifact or its id",
    )


def test_enqueue_many_checks_once_and_writes_nothing():
    refused(
        lambda: input_tasks.transcode.enqueue_many([((), {}), ((), {})]),
        MissingInput,
        "required input 'video'",
    )


def test_on_commit_is_refused_at_the_call(video):
    refused(
        lambda: input_tasks.transcode.using(inputs={"video": 987654321}).enqueue_on_commit(),
        ArtifactNotFound,
        "input 'video'",
    )


def test_row_carries_bindings_total_and_primary_hash(video):
    subs = artifacts.register(b"s" * 700, media_type="text/plain")
    result = input_tasks.transcode.using(inputs={"video": video, "subtitles": subs.pk}).enqueue()
    job = Job.objects.get(pk=result.id)
    assert job.input_bytes == 1300
    # The primary input is the largest: subtitles here, at 700 bytes.
    assert job.primary_input_hash == hashlib.sha256(b"s" * 700).hexdigest()
    assert job.artifact_bindings["video"] == {
        "artifact": video.pk,
        "hash": video.content_hash,
        "size": 600,
        "media_type": "video/mp4",
        "storage": "default",
        "path": video.path,
    }


def test_ties_go_to_the_first_declared():
    a = artifacts.register(b"a" * 10, media_type="video/mp4")
    b = artifacts.register(b"b" * 10, media_type="text/plain")
    result = input_tasks.transcode.using(inputs={"subtitles": b, "video": a}).enqueue()
    assert Job.objects.get(pk=result.id).primary_input_hash == a.content_hash


def test_many_jobs_share_the_bindings(video):
    results = input_tasks.transcode.using(inputs={"video": video}).enqueue_many(
        [(("480p",), {}), (("720p",), {})]
    )
    jobs = Job.objects.filter(pk__in=[r.id for r in results])
    assert {j.primary_input_hash for j in jobs} == {video.content_hash}
    assert {j.input_bytes for j in jobs} == {600}


def test_a_task_without_inputs_keeps_the_columns_empty():
    result = input_tasks.no_inputs.enqueue()
    job = Job.objects.get(pk=result.id)
    assert (job.artifact_bindings, job.input_bytes, job.primary_input_hash) == (None, 0, "")


# --- declarations, refused when the task is defined


def _noop() -> None:
    return None


@pytest.mark.parametrize(
    ("declared", "fragment"),
    [
        ("video", "inputs must be a list of InputSpec"),
        ([InputSpec("a b")], "input name 'a b' must be an identifier"),
        ([InputSpec("v", max_bytes=0)], "input 'v': max_bytes must be a positive integer"),
        ([InputSpec("v", media_types=("video",))], "media type 'video' is not"),
        ([InputSpec("v"), InputSpec("v")], "input 'v' is declared more than once"),
        ([42], "inputs must be InputSpec values"),
    ],
)
def test_bad_declarations(declared, fragment):
    with pytest.raises(InvalidTask, match=fragment.replace("(", r"\(")):
        task(inputs=declared)(_noop)


def test_a_bare_name_is_a_required_input():
    defined = task(inputs=["data"])(_noop)
    assert defined.inputs == (InputSpec("data"),)
