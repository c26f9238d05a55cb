"""Whether a value can be stored as JSON or text on every database we support.

One walker for every value that becomes a column: enqueue uses it for arguments,
the worker for return values and error messages. What it refuses, and why:

- a NUL character (``\\x00``) in a string or a dict key: PostgreSQL's text and
  jsonb cannot hold it (MariaDB and SQLite can; refused everywhere, so a job
  behaves the same on all three);
- a surrogate code point (``"\\ud800"``, from a bad decode): not encodable as
  UTF-8, so no driver can send it;
- NaN and ±Infinity: JSON has no such numbers;
- containers nested deeper than ``max_depth`` (MariaDB refuses a JSON document
  deeper than 31 levels; a deep value would also exhaust Python's recursion);
- anything that is not a JSON value: str, int, float, bool, None, list, tuple
  and dict with str keys.

The common case is a handful of scalars and small containers, so the walk is
iterative, level by level, with no path bookkeeping; only when that fast pass
meets something it does not accept outright does a second pass, which tracks
paths, find and describe the first culprit.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from .limits import JSON_MAX_DEPTH

# Shown values and keys are cut to this many characters: a culprit may be huge.
_SHOWN = 40


class Unstorable(NamedTuple):
    """The first unstorable part of a value: where, and a predicate saying why,
    e.g. ``Unstorable("args[0]['name']", "contains a NUL character (\\x00), ...")``."""

    path: str
    predicate: str

    def __str__(self) -> str:
        return f"{self.path or 'the value'} {self.predicate}"


def find_unstorable(
    value: object,
    *,
    max_depth: int = JSON_MAX_DEPTH,
    root: str = "",
    max_items: int | None = None,
) -> str | None:
    """A readable reason ``value`` cannot be stored, naming where, or ``None``.

    ``find_unstorable([math.nan])`` is ``"[0] is float nan, which JSON cannot
    represent"``; ``root`` prefixes every path (``root="return value"``).
    ``max_depth`` counts nested lists and dicts (``[[1]]`` is 2 deep);
    ``max_items`` bounds the values visited (shared sub-lists count each time they
    appear, as JSON would write them), for callers that cap the encoded size.
    """
    found = locate_unstorable(value, max_depth=max_depth, root=root, max_items=max_items)
    return None if found is None else str(found)


def locate_unstorable(
    value: object,
    *,
    max_depth: int = JSON_MAX_DEPTH,
    root: str = "",
    max_items: int | None = None,
) -> Unstorable | None:
    """``find_unstorable``, as a path and a predicate."""
    if _plainly_storable(value, max_depth, max_items):
        return None
    return _describe(value, max_depth, root, max_items)


def check_storable_text(text: str) -> str | None:
    """Why a plain string cannot be stored in a text column (a predicate such as
    ``"contains a NUL character ..."``), or ``None``."""
    if "\x00" in text:
        return _NUL
    if not text.isascii():
        try:
            # Several times faster than searching for a surrogate, and exact.
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            return _surrogate(text[exc.start])
    return None


def storable_text(text: str) -> str:
    """``text`` made storable: NUL and surrogates replaced by their escapes
    (``\\x00``, ``\\ud800``), everything else kept. For messages that must be
    recorded whatever they hold, such as an exception's."""
    if check_storable_text(text) is None:
        return text
    text = text.replace("\x00", "\\x00")
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


_NUL = "contains a NUL character (\\x00), which PostgreSQL cannot store"


def _surrogate(char: str) -> str:
    return f"contains a lone surrogate ({char!r}), which cannot be encoded as UTF-8"


def _encodes(text: str) -> bool:
    """Whether ``text`` encodes as UTF-8: False when it holds a surrogate code
    point, which a Python str may hold and UTF-8 cannot."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _plainly_storable(value: object, max_depth: int, max_items: int | None) -> bool:
    """True when every value under ``value`` is plainly storable. Exact types only:
    anything unusual (a subclass, a bad value) returns False, and ``_describe``
    decides. Walks level by level: a level's containers hand their items to the
    next in one C-level ``extend``."""
    level: list[Any] = [value]
    depth = 0
    seen = 0
    while level:
        seen += len(level)
        if max_items is not None and seen > max_items:
            return False
        below: list[Any] = []
        for item in level:
            kind = type(item)
            if kind is str:
                if "\x00" in item or (not item.isascii() and not _encodes(item)):
                    return False
            elif kind is int or kind is bool or item is None:
                continue
            elif kind is float:
                if not math.isfinite(item):
                    return False
            elif kind is list or kind is tuple:
                if depth >= max_depth:
                    return False
                below.extend(item)
            elif kind is dict:
                if depth >= max_depth:
                    return False
                for key in item:
                    if type(key) is not str or "\x00" in key:
                        return False
                    if not key.isascii() and not _encodes(key):
                        return False
                below.extend(item.values())
            else:
                return False
        level = below
        depth += 1
    return True


def _describe(value: object, max_depth: int, root: str, max_items: int | None) -> Unstorable | None:
    """The first unstorable part of ``value`` in document order, with its path."""
    # (value, path, depth of the containers around it); reversed pushes keep order.
    stack: list[tuple[object, str, int]] = [(value, root, 0)]
    seen = 0
    while stack:
        item, path, depth = stack.pop()
        seen += 1
        if max_items is not None and seen > max_items:
            return Unstorable(root, f"holds more than {max_items} values")
        if item is None or isinstance(item, bool | int):
            continue
        if isinstance(item, str):
            problem = check_storable_text(item)
            if problem:
                return Unstorable(path, problem)
        elif isinstance(item, float):
            if not math.isfinite(item):
                return Unstorable(path, f"is float {item!r}, which JSON cannot represent")
        elif isinstance(item, list | tuple | dict):
            if depth >= max_depth:
                return Unstorable(
                    path,
                    f"nests lists or dicts deeper than {max_depth} levels, "
                    "more than a JSON column stores on every database",
                )
            if isinstance(item, dict):
                children = []
                for key, child in item.items():
                    if not isinstance(key, str):
                        return Unstorable(
                            _key_path(path, key),
                            f"is {type(key).__name__}, which is not a str (JSON keys are strings)",
                        )
                    problem = check_storable_text(key)
                    if problem:
                        return Unstorable(_key_path(path, key), problem)
                    children.append((child, f"{path}[{_show(key)}]", depth + 1))
                stack.extend(reversed(children))
            else:
                stack.extend(
                    (child, f"{path}[{index}]", depth + 1)
                    for index, child in reversed(list(enumerate(item)))
                )
        else:
            return Unstorable(
                path,
                f"is {type(item).__name__} {_show(item)}, which is not JSON-serialisable",
            )
    return None


def _key_path(path: str, key: object) -> str:
    return f"{path} key {_show(key)}" if path else f"key {_show(key)}"


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."
