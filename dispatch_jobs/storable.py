"""What every database can store: the one place that says so.

PostgreSQL's text and jsonb cannot hold a NUL character, no database driver can
encode a lone surrogate as UTF-8, JSON has no NaN or Infinity, MariaDB refuses a
JSON document nested deeper than 31 levels, and a structure nested deep enough
exhausts the encoder's recursion. Values are checked before they reach a
statement, so a bad value is the error of the job (or the call) that carries it,
never a failed batch that takes its neighbours down with it, never a raw
``DataError`` in the caller's transaction. Refused on every database alike, so a
job behaves the same on all three.

Enqueue checks arguments here, the worker return values and error messages. The
common case is a handful of scalars and small containers, so the walk is
iterative, level by level, with no path bookkeeping; only when that fast pass
meets something it does not accept outright does a second pass, which tracks
paths, find and describe the first culprit.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from .limits import JSON_MAX_DEPTH

# Deeper JSON than this is refused: MariaDB's JSON check refuses a 32nd level,
# and it is far below the depth at which the encoders recurse out of the stack.
MAX_DEPTH = JSON_MAX_DEPTH

_NUL = "\x00"
_WHY_NUL = "which PostgreSQL cannot store"
_WHY_SURROGATE = "which cannot be encoded as UTF-8"


class Unstorable(NamedTuple):
    """The first unstorable part of a value, in two phrasings.

    ``str()`` reads "<noun> at <path>" (``"NaN at [0]['price']"``, ``"... at the
    top"``), as a worker records it; ``f"{path} {predicate}"`` reads as a sentence
    about that place (``"args[0]['name'] contains a NUL character (\\x00), which
    PostgreSQL cannot store"``), as enqueue's errors do.
    """

    path: str
    noun: str
    predicate: str

    def __str__(self) -> str:
        return f"{self.noun} at {self.path or 'the top'}"

    def sentence(self) -> str:
        """The predicate form: ``"args[0] is float nan, which JSON cannot represent"``."""
        return f"{self.path or 'the value'} {self.predicate}"


def text_problem(value: str) -> str | None:
    """Why ``value`` cannot be stored as text, or None."""
    if _NUL in value:
        return "contains a NUL character (\\x00)"
    if not value.isascii() and not _encodes(value):
        return "contains a lone surrogate (not encodable as UTF-8)"
    return None


def check_storable_text(text: str) -> str | None:
    """``text_problem`` with the reason, as a predicate of the text: "contains a NUL
    character (\\x00), which PostgreSQL cannot store", or None."""
    if _NUL in text:
        return f"contains a NUL character (\\x00), {_WHY_NUL}"
    if not text.isascii():
        try:
            # Several times faster than searching for a surrogate, and exact.
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            return f"contains a lone surrogate ({text[exc.start]!r}), {_WHY_SURROGATE}"
    return None


def find_unstorable(
    value: Any,
    *,
    max_depth: int = MAX_DEPTH,
    root: str = "",
    max_items: int | None = None,
    json_only: bool = False,
) -> str | None:
    """Why ``value`` cannot be stored, with the path to the bad part, e.g.
    ``"NaN at [0]['price']"``; None when every database can store it.

    ``max_depth`` counts nested lists and dicts (``[[1]]`` is 2 deep); ``root``
    prefixes every path; ``max_items`` bounds the values visited (a sub-list
    shared twice counts twice, as JSON writes it twice), for callers that cap the
    encoded size. With ``json_only`` a value of another type, or a dict key that is
    not a str, is unstorable too (callers that normalise values first leave it
    off). Iterative: depth costs no stack.
    """
    found = locate_unstorable(
        value, max_depth=max_depth, root=root, max_items=max_items, json_only=json_only
    )
    return None if found is None else str(found)


def locate_unstorable(
    value: Any,
    *,
    max_depth: int = MAX_DEPTH,
    root: str = "",
    max_items: int | None = None,
    json_only: bool = False,
) -> Unstorable | None:
    """``find_unstorable``, as an ``Unstorable``."""
    if plainly_storable(value, max_depth, max_items):
        return None
    return _describe(value, max_depth, root, max_items, json_only)


def storable_text(value: str, *, limit: int | None = None) -> str:
    """``value`` made storable without losing what it says: NUL and lone
    surrogates escaped (``\\x00``, ``\\udc80``), and cut to ``limit`` characters
    with a note when longer. For error messages and tracebacks, which must be
    recorded whatever they contain."""
    if _NUL in value:
        value = value.replace(_NUL, "\\x00")
    if not value.isascii() and not _encodes(value):
        value = value.encode("utf-8", "backslashreplace").decode("utf-8")
    if limit is not None and len(value) > limit:
        cut = len(value) - limit
        value = f"{value[:limit]}\n… [{cut} more characters not stored]"
    return value


def _encodes(text: str) -> bool:
    """Whether ``text`` encodes as UTF-8: False when it holds a surrogate code
    point, which a Python str may hold and UTF-8 cannot."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def plainly_storable(value: object, max_depth: int, max_items: int | None) -> bool:
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
                if _NUL in item or (not item.isascii() and not _encodes(item)):
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
                    if type(key) is not str or _NUL in key:
                        return False
                    if not key.isascii() and not _encodes(key):
                        return False
                below.extend(item.values())
            else:
                return False
        level = below
        depth += 1
    return True


def _describe(
    value: object, max_depth: int, root: str, max_items: int | None, json_only: bool
) -> Unstorable | None:
    """The first unstorable part of ``value`` in document order, with its path."""
    # (value, path, depth of the containers around it); reversed pushes keep order.
    stack: list[tuple[object, str, int]] = [(value, root, 0)]
    seen = 0
    while stack:
        item, path, depth = stack.pop()
        seen += 1
        if max_items is not None and seen > max_items:
            return Unstorable(
                root, f"more than {max_items} values", f"holds more than {max_items} values"
            )
        if item is None or isinstance(item, bool | int):
            continue
        if isinstance(item, str):
            problem = check_storable_text(item)
            if problem:
                return Unstorable(path, f"a string that {text_problem(item)}", problem)
        elif isinstance(item, float):
            if not math.isfinite(item):
                return Unstorable(
                    path, _float_name(item), f"is float {item!r}, which JSON cannot represent"
                )
        elif isinstance(item, list | tuple | dict):
            if depth >= max_depth:
                return Unstorable(
                    path,
                    f"nesting deeper than {max_depth} levels",
                    f"nests lists or dicts deeper than {max_depth} levels, "
                    "more than a JSON column stores on every database",
                )
            if isinstance(item, dict):
                children = []
                for key, child in item.items():
                    if isinstance(key, str):
                        problem = check_storable_text(key)
                        if problem:
                            return Unstorable(
                                path,
                                f"a key that {text_problem(key)}",
                                f"key {_key(key)} {problem}",
                            )
                    elif json_only:
                        return Unstorable(
                            path,
                            f"a key of type {type(key).__name__}",
                            f"key {_key(key)} is {type(key).__name__}, which is not a str "
                            "(JSON keys are strings)",
                        )
                    children.append((child, f"{path}[{_key(key)}]", depth + 1))
                stack.extend(reversed(children))
            else:
                stack.extend(
                    (child, f"{path}[{index}]", depth + 1)
                    for index, child in reversed(list(enumerate(item)))
                )
        elif json_only:
            return Unstorable(
                path,
                f"a value of type {type(item).__name__}",
                f"is {type(item).__name__} {_key(item)}, which is not JSON-serialisable",
            )
    return None


def _float_name(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


def _key(key: object) -> str:
    text = repr(key)
    return text if len(text) <= 40 else f"{text[:37]}…"
