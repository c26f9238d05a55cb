"""A real ``runjobs`` process stages inputs into its cache directory, once per
hash, and its handlers read them from there: in its threads, and in the children
of the subprocess rung (the worker stages, the child reads the pinned file)."""

from __future__ import annotations

import hashlib

import pytest

from dispatch_jobs import artifacts
from dispatch_jobs.models import Job, JobState
from tests.jobs import input_tasks
from tests.worker.processes import FAST

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


@pytest.mark.parametrize("rung", ["in-process", "subprocess"])
def test_a_worker_stages_each_input_once_and_its_handlers_read_it(workers, tmp_path, rung):
    cache = tmp_path / "cache"
    out = tmp_path / "out"
    out.mkdir()
    blobs = [b"first input " * 500, b"second input " * 700]
    made = [artifacts.register(blob, media_type="text/plain") for blob in blobs]
    results = [
        input_tasks.digest.using(inputs={"data": made[i % 2]}).enqueue(str(out)) for i in range(6)
    ]
    proc = workers(
        "--burst",
        "--concurrency",
        "3",
        "--execution",
        rung,
        *FAST,
        env={"DISPATCH_TEST_ARTIFACT_CACHE_DIR": str(cache)},
    )
    assert proc.wait() == 0, proc.log()
    for i, result in enumerate(results):
        job = Job.objects.get(pk=result.id)
        assert job.state == JobState.COMPLETED, job.attempts
        assert job.return_value == hashlib.sha256(blobs[i % 2]).hexdigest()
        text, path = (out / f"{job.pk}.digest").read_text().split()
        assert path == str(cache / made[i % 2].content_hash)
    assert {p.name for p in cache.iterdir() if p.is_file()} == {m.content_hash for m in made}
