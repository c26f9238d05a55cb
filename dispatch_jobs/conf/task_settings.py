"""The settings of what a task's jobs carry and need: the scope the tasks backend
gives them (docs/tasks.md), and their artifacts and resource estimates
(docs/how-to/inputs.md, docs/how-to/estimates.md)."""

from __future__ import annotations

from ..setting_kinds import CallablePath, Flag, Integer, Text
from .setting import ARTIFACTS, TASKS, Setting


class TaskSettings:
    """The keys of the settings page's "The tasks backend" and "Artifacts and
    estimates" sections."""

    scope_from_request = Setting(
        TASKS,
        CallablePath("(request) -> Scope | (app_id, org_id) | None"),
        "",
        "Dotted path of a callable(request) -> Scope | (app_id, org_id) | None that "
        "ScopeMiddleware uses to set the scope jobs enqueued by a request carry.",
        check="dispatch_jobs.E103",
    )

    # --- Artifacts and estimates (docs/how-to/inputs.md, docs/how-to/estimates.md).
    artifact_storage = Setting(
        ARTIFACTS,
        Text(),
        "default",
        "The STORAGES alias artifacts.register() writes new artifacts to.",
        check="dispatch_jobs.E092",
    )
    artifact_cache_dir = Setting(
        ARTIFACTS,
        Text(),
        "",
        "The directory a worker stages its jobs' inputs in, one per worker process "
        '("": a directory named after the worker under the system temp directory).',
    )
    artifact_cache_bytes = Setting(
        ARTIFACTS,
        Integer(1),
        10 * 1024**3,
        "The most bytes a worker's input cache keeps; least recently used files beyond it "
        "are removed, never one a running job is using.",
        check="dispatch_jobs.E090",
    )
    staging_retries = Setting(
        ARTIFACTS,
        Integer(0),
        5,
        "Attempts whose inputs could not be staged that are not charged to the job's "
        "retries; one more fails the job.",
        check="dispatch_jobs.E090",
    )
    estimate_resources = Setting(
        ARTIFACTS,
        Flag(),
        False,
        "Raise every task's declared memory and cpu from its measured usage at enqueue "
        "(a task's estimate= overrides it).",
        check="dispatch_jobs.E091",
    )
