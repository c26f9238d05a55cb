"""What every database can store: the one place that says so.

PostgreSQL's text and jsonb cannot hold a NUL character, no database driver can
encode a lone surrogate as UTF-8, JSON has no NaN or Infinity, and a structure
nested deep enough exhausts the encoder's recursion. Values are checked before
they reach a statement, so a bad value is the error of the job that carries it,
never a failed batch that takes its neighbours down with it.
"""

from __future__ import annotations

import math
from typing import Any

# Deeper JSON than this is refused: far beyond any real document, far below
# the depth at which the encoders recurse out of the stack.
MAX_DEPTH = 64

_NUL = "\x00"


def text_problem(value: str) -> str | None:
    """Why ``value`` cannot be stored as text, or None."""
    if _NUL in value:
        return "contains a NUL character (\\x00)"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "contains a lone surrogate (not encodable as UTF-8)"
    return None


def find_unstorable(value: Any, *, max_depth: int = MAX_DEPTH) -> str | None:
    """Why ``value`` (JSON-shaped: dicts, lists, str, numbers, bool, None) cannot
    be stored, with the path to the bad part, e.g. ``"NaN at [0]['price']"``;
    None when every database can store it. Iterative: depth costs no stack."""
    stack: list[tuple[Any, str, int]] = [(value, "", 0)]
    while stack:
        item, path, depth = stack.pop()
        if isinstance(item, str):
            problem = text_problem(item)
            if problem:
                return f"a string that {problem} at {path or 'the top'}"
        elif isinstance(item, float):
            if not math.isfinite(item):
                return f"{_float_name(item)} at {path or 'the top'}"
        elif isinstance(item, dict):
            if depth >= max_depth:
                return f"nesting deeper than {max_depth} levels at {path or 'the top'}"
            for key, child in item.items():
                if isinstance(key, str):
                    problem = text_problem(key)
                    if problem:
                        return f"a key that {problem} at {path or 'the top'}"
                stack.append((child, f"{path}[{_key(key)}]", depth + 1))
        elif isinstance(item, (list, tuple)):
            if depth >= max_depth:
                return f"nesting deeper than {max_depth} levels at {path or 'the top'}"
            for index, child in enumerate(item):
                stack.append((child, f"{path}[{index}]", depth + 1))
    return None


def storable_text(value: str, *, limit: int | None = None) -> str:
    """``value`` made storable without losing what it says: NUL and lone
    surrogates escaped (``\\x00``, ``\\udc80``), and cut to ``limit`` characters
    with a note when longer. For error messages and tracebacks, which must be
    recorded whatever they contain."""
    if _NUL in value:
        value = value.replace(_NUL, "\\x00")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        value = value.encode("utf-8", "backslashreplace").decode("utf-8")
    if limit is not None and len(value) > limit:
        cut = len(value) - limit
        value = f"{value[:limit]}\n… [{cut} more characters not stored]"
    return value


def _float_name(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


def _key(key: object) -> str:
    text = repr(key)
    return text if len(text) <= 40 else f"{text[:37]}…"
