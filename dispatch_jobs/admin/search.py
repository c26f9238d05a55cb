"""The job list's search box: what a typed term means, checked before any of
it reaches the database."""

from __future__ import annotations

import json
import math
from typing import Any

# Deeper JSON than this is refused (Python's parser would hit its recursion
# limit long before PostgreSQL's own depth limit).
MAX_DEPTH = 32


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"the number {text} is too large")
    return number


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _check(value: Any, depth: int = 0) -> None:
    """Refuse what PostgreSQL's jsonb cannot store: NUL characters and lone
    surrogates in strings (keys included), and absurd nesting."""
    if depth > MAX_DEPTH:
        raise ValueError(f"it is nested more than {MAX_DEPTH} levels deep")
    if isinstance(value, str):
        if "\x00" in value:
            raise ValueError("it contains a NUL character (\\u0000)")
        if any("\ud800" <= char <= "\udfff" for char in value):
            raise ValueError("it contains a lone surrogate")
    elif isinstance(value, list):
        for item in value:
            _check(item, depth + 1)
    elif isinstance(value, dict):
        for key, item in value.items():
            _check(key, depth + 1)
            _check(item, depth + 1)


def json_value(term: str) -> dict[str, Any] | list[Any]:
    """The object or array ``term`` spells; ``ValueError`` saying why not."""
    try:
        value = json.loads(term, parse_float=_finite, parse_constant=_no_constant)
    except RecursionError as exc:
        raise ValueError(f"it is nested more than {MAX_DEPTH} levels deep") from exc
    if not isinstance(value, dict | list):
        raise ValueError("search for an object or an array")
    _check(value)
    return value
