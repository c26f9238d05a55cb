"""New job rows as the enqueue verbs hand them to an engine: columns, not models."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from ..payloads import EncodedJSON

__all__ = ["NEW_ROW", "EncodedJSON", "NewJobs"]

# The RETURNING of insert_jobs: what a task result needs of a new row.
NEW_ROW = ("id", "created_at")


class NewJobs(NamedTuple):
    """New job rows as columns, keyed by attname. ``shared`` holds the values every
    row has (one parameter for the batch), ``own`` one value per row, in row order.
    A column in neither gets the model's default; JSON columns may hold
    ``EncodedJSON``. The state is always pending."""

    size: int  # rows
    shared: Mapping[str, Any]
    own: Mapping[str, Sequence[Any]]
