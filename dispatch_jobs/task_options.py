"""How each option a task declares is checked and put in canonical form: one
function per kind of option, each raising ``InvalidTask`` that names the task
and the option. ``task._normalise`` applies them to every ``DispatchTask``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import timedelta

from . import compat, limits
from .exceptions import InvalidDuration, InvalidResources
from .limits import short_repr
from .resources import check_custom_key_count, parse_resources
from .scope import Scope, as_scope
from .storable import check_storable_text


class CanonicalResources(dict[str, int]):
    """A resource set already parsed into canonical units.

    ``dataclasses.replace`` (behind ``using()``) passes every field back through
    ``__init__``; the marker stops already-canonical quantities being parsed a second
    time (``2000`` millicores read as 2000 cpus).
    """


def describe(func: object) -> str:
    module = getattr(func, "__module__", None)
    qualname = getattr(func, "__qualname__", None)
    return f"{module}.{qualname}" if module and qualname else repr(func)


def set_option(t: object, name: str, value: object) -> None:
    # The dataclass is frozen; normalising in __post_init__ is the one sanctioned write.
    object.__setattr__(t, name, value)


def retries(where: str, value: object) -> int:
    top = limits.MAX_RETRIES_MAX
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= top:
        raise compat.InvalidTask(
            f"{where}: max_retries must be an integer from 0 to {top}, got {short_repr(value)}."
        )
    return value


def duration(where: str, option: str, value: object) -> timedelta | None:
    """A positive duration within the option's bounds (``limits.duration_bounds``),
    from a ``timedelta`` or a number of seconds."""
    if value is None:
        return None
    low, high = limits.duration_bounds(option)
    try:
        return limits.to_duration(value, option, low=low, high=high, numbers=True)
    except InvalidDuration as exc:
        raise compat.InvalidTask(f"{where}: {exc}") from exc


def text(where: str, option: str, value: object, limit: int, *, empty_ok: bool) -> None:
    if not isinstance(value, str) or len(value) > limit or (not value and not empty_ok):
        raise compat.InvalidTask(
            f"{where}: {option} must be a{'' if empty_ok else ' non-empty'} string of at "
            f"most {limit} characters, got {short_repr(value)}."
        )
    problem = check_storable_text(value)
    if problem:
        raise compat.InvalidTask(f"{where}: {option} {short_repr(value)} {problem}.")


def exception_classes(where: str, value: object) -> tuple[type[BaseException] | str, ...]:
    """Exception classes, or their dotted paths (resolved by the worker, so a task
    module need not import an exception it only names)."""
    items = (value,) if isinstance(value, type | str) else value
    if not isinstance(items, Iterable):
        raise compat.InvalidTask(
            f"{where}: permanent_exceptions must be exception classes, got {value!r}."
        )
    classes = tuple(items)
    for item in classes:
        if isinstance(item, str) and "." in item:
            continue
        if not (isinstance(item, type) and issubclass(item, BaseException)):
            raise compat.InvalidTask(
                f"{where}: permanent_exceptions must be exception classes or their "
                f"dotted paths, got {item!r}."
            )
    return classes


def resources_option(func: object, option: str, values: object) -> CanonicalResources:
    if isinstance(values, CanonicalResources):
        return values
    if values is None:
        return CanonicalResources()
    try:
        return CanonicalResources(parse_resources(values))  # type: ignore[arg-type]
    except InvalidResources as exc:
        raise compat.InvalidTask(f"Task {describe(func)}: {option}: {exc}") from exc


def custom_keys(func: object, option: str, resources: Mapping[str, int]) -> None:
    try:
        check_custom_key_count(resources)
    except InvalidResources as exc:
        raise compat.InvalidTask(f"Task {describe(func)}: {option}: {exc}") from exc


def to_scope(func: object, value: object) -> Scope:
    try:
        scope = as_scope(value)
    except ValueError as exc:
        raise compat.InvalidTask(f"Task {describe(func)}: {exc}") from exc
    for label, text in (("app_id", scope.app_id), ("org_id", scope.org_id)):
        if len(text) > limits.SCOPE_MAX:
            raise compat.InvalidTask(
                f"Task {describe(func)}: scope {label} is longer than {limits.SCOPE_MAX} "
                f"characters: {text[:20]!r}..."
            )
        problem = check_storable_text(text)
        if problem:
            raise compat.InvalidTask(
                f"Task {describe(func)}: scope {label} {short_repr(text)} {problem}."
            )
    return scope
