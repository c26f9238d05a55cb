"""Inputs through the real pipeline (claim, executor, fenced completion), inline:
the handler reads its inputs as local paths; an attempt whose inputs cannot be
staged is retried without charging a retry, up to STAGING_RETRIES."""

from __future__ import annotations

import hashlib
import uuid

import pytest
from django.core.files.storage import storages

from dispatch_jobs import artifacts, store
from dispatch_jobs.models import Job, JobState, Usage
from dispatch_jobs.worker.inline import drain
from tests.jobs import input_tasks

pytestmark = pytest.mark.django_db


def unique(text: str) -> bytes:
    return f"{text} {uuid.uuid4().hex}".encode()


def test_the_handler_reads_its_input_from_a_local_path(tmp_path):
    data = unique("payload")
    artifact = artifacts.register(data, media_type="text/plain")
    result = input_tasks.digest.using(inputs={"data": artifact}).enqueue(str(tmp_path))
    assert drain() == 1
    job = Job.objects.get(pk=result.id)
    assert job.state == JobState.COMPLETED, job.attempts
    assert job.return_value == hashlib.sha256(data).hexdigest()
    text, path = (tmp_path / f"{job.pk}.digest").read_text().split()
    assert text == job.return_value
    assert path.endswith(artifact.content_hash)  # the cache's file, not the storage's


def test_unstaged_attempts_are_not_charged_then_capped(settings):
    settings.DISPATCH_JOBS = {"STAGING_RETRIES": 1}
    artifact = artifacts.register(unique("lost"))
    result = input_tasks.digest.using(inputs={"data": artifact}).enqueue("/nowhere")
    storages["default"].delete(artifact.path)
    assert drain() == 1
    job = Job.objects.get(pk=result.id)
    assert (job.state, job.retry_count) == (JobState.RETRYING, 0)
    assert job.attempts[-1]["status"] == "unstaged"
    assert "could not be read" in job.last_error
    assert not Usage.objects.filter(job_id=job.pk).exists()  # the handler never ran
    store.run_jobs_now([job.pk])
    assert drain() == 1
    job.refresh_from_db()
    assert (job.state, job.retry_count) == (JobState.FAILED, 0)
    assert [a["status"] for a in job.attempts] == ["unstaged", "unstaged"]
    assert "inputs could not be staged 2 times" in job.last_error


def test_corrupt_bytes_are_an_unstaged_attempt(settings):
    settings.DISPATCH_JOBS = {"STAGING_RETRIES": 0}
    artifact = artifacts.register(unique("true"))
    result = input_tasks.digest.using(inputs={"data": artifact}).enqueue("/nowhere")
    with storages["default"].open(artifact.path, "wb") as handle:
        handle.write(unique("false"))
    assert drain() == 1
    job = Job.objects.get(pk=result.id)
    assert job.state == JobState.FAILED
    assert job.attempts[-1]["exception_class"] == "dispatch_jobs.exceptions.ArtifactCorrupt"


def test_a_row_with_broken_bindings_fails_alone():
    """Invariant 8: a row the worker cannot decode is that job's outcome."""
    artifact = artifacts.register(unique("fine"))
    good = input_tasks.digest.using(inputs={"data": artifact}).enqueue("/nowhere")
    Job.objects.filter(pk=good.id).update(artifact_bindings={"data": "not a reference"})
    assert drain() == 1
    job = Job.objects.get(pk=good.id)
    assert job.state == JobState.FAILED
    assert "column 'artifact_bindings' must be an object" in job.last_error
