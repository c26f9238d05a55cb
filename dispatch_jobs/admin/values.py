"""Showing job data to a person: redaction, pretty-printing and truncation.

Every argument and return value passes through the ``REDACT`` hook before it is
shown anywhere in the admin, including the "full value" page. The text returned
here is plain text; templates escape it (nothing here is marked safe).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.utils.module_loading import import_string

from ..conf import settings
from ..models import Job

# Longer values are cut on the detail page, with a link to the full value.
PREVIEW_CHARS = 4_000


def redact(value: Any, *, job: Job, field: str) -> Any:
    """``value`` as the configured ``REDACT`` callable wants it shown."""
    path = settings.redact
    if not path:
        return value
    return import_string(path)(value, job=job, field=field)


def pretty(value: Any) -> str:
    """Indented JSON; anything JSON cannot encode is shown through ``str``."""
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str)


@dataclass(frozen=True)
class Shown:
    text: str
    truncated: bool
    full_size: int


def shown(job: Job, field: str) -> Shown:
    """The redacted, pretty-printed value of ``job.<field>``, cut to a preview."""
    text = full_text(job, field)
    if len(text) <= PREVIEW_CHARS:
        return Shown(text, False, len(text))
    return Shown(text[:PREVIEW_CHARS], True, len(text))


FIELDS = {"payload": "arguments", "return_value": "return value"}


def full_text(job: Job, field: str) -> str:
    if field not in FIELDS:
        raise KeyError(field)
    return pretty(redact(getattr(job, field), job=job, field=field))
