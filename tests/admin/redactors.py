"""A REDACT hook for the tests: hides any key named "password" or "token"."""

from __future__ import annotations

from typing import Any

from dispatch_jobs.models import Job

SECRET_KEYS = {"password", "token"}


def hide_secrets(value: Any, *, job: Job, field: str) -> Any:
    if isinstance(value, dict):
        return {
            k: "•••" if k in SECRET_KEYS else hide_secrets(v, job=job, field=field)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [hide_secrets(v, job=job, field=field) for v in value]
    return value
