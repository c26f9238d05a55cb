"""Tasks with declared artifact inputs (tests/artifacts/)."""

import hashlib as _hashlib
from pathlib import Path as _Path

from dispatch_jobs import task as _task
from dispatch_jobs.inputs import InputSpec as _InputSpec


@_task(
    inputs=[
        _InputSpec("video", max_bytes=1000, media_types=("video/*",)),
        _InputSpec("subtitles", required=False, media_types=("text/plain",)),
    ]
)
def transcode(preset: str = "720p") -> str:
    return preset


@_task(inputs=[_InputSpec("data")], takes_context=True)
def digest(context, directory: str) -> str:
    """Read the staged input from its local path; record what it read."""
    staged = context.inputs["data"]
    text = _hashlib.sha256(_Path(staged.path).read_bytes()).hexdigest()
    with open(_Path(directory) / f"{context.job_id}.digest", "w") as handle:
        handle.write(f"{text} {staged.path}\n")
    return text


@_task
def no_inputs() -> None:
    return None


@_task(inputs=[_InputSpec("data")], takes_context=True)
def size_of(context) -> int:
    """The staged input's size, read from the local file (bench/locality.py)."""
    return _Path(context.inputs["data"].path).stat().st_size


@_task(estimate=True, resources={"memory": "64Mi"}, inputs=[_InputSpec("data", required=False)])
def estimated() -> None:
    """Its memory floor is raised from its measured usage (tests/artifacts/test_estimates.py)."""
    return None


@_task(resources={"memory": "64Mi"})
def not_estimated() -> None:
    return None
