"""Enqueue-time validation: bad input is refused with a clear error before a row exists.

Every error names the task and what is wrong with which argument or option, so the
caller can fix the call site without reading a worker's log.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings as django_settings
from django.utils import timezone

from . import compat, limits
from .conf import settings

# Re-exported: docs/tasks.md names them here (they live in exceptions.py).
from .exceptions import InvalidArguments, Unschedulable  # noqa: F401
from .payloads import EncodedJSON, encode_payload, encoded_size, payload_size
from .resources import ResourceSet, fits
from .scope import Scope
from .storable import Unstorable, check_storable_text, locate_unstorable, plainly_storable

NAME_MAX = limits.NAME_MAX
SCOPE_MAX = limits.SCOPE_MAX
# The args list and kwargs dict are one level of the payload document, and the
# payload's own dict another: what is left is each argument's.
_ARGUMENTS_DEPTH = limits.JSON_MAX_DEPTH - 1


def check_task_fields(task: compat.Task) -> None:
    """Checks the base rules leave out or would crash on: types first, then the
    limits of our columns. Raises ``InvalidTask`` naming the task."""
    where = f"Task {task.module_path}"
    name = getattr(task, "job_name", task.module_path)
    if len(name) > NAME_MAX:
        raise compat.InvalidTask(
            f"{where}: its stored name {name[:40]!r}... is longer than {NAME_MAX} characters; "
            "give it a shorter stable name= alias."
        )
    _check_text(where, "name", name)
    priority = task.priority
    if isinstance(priority, bool) or not isinstance(priority, int | float):
        raise compat.InvalidTask(f"{where}: priority must be a whole number, got {priority!r}.")
    queue = task.queue_name
    if not limits.is_queue_name(queue):
        raise compat.InvalidTask(
            f"{where}: queue_name must be a non-empty string of at most {limits.QUEUE_MAX} "
            f"characters, got {queue!r}."
        )
    _check_text(where, "queue_name", queue)
    run_after = task.run_after
    if run_after is not None:
        if not isinstance(run_after, datetime):
            raise compat.InvalidTask(
                f"{where}: run_after must be a datetime, got {type(run_after).__name__} "
                f"{run_after!r}."
            )
        _check_run_after(where, run_after)
    lease_ttl = getattr(task, "lease_ttl", None)
    if lease_ttl is not None:
        check_lease_ttl(where, lease_ttl)


def check_lease_ttl(where: str, lease_ttl: timedelta) -> None:
    """A task's lease must outlive the gap between two renewals: the worker renews
    every ``HEARTBEAT_INTERVAL``, so a shorter lease lapses between beats and the
    job runs twice. Read at definition, ``using()`` and every enqueue."""
    heartbeat = settings.heartbeat_interval
    if lease_ttl <= heartbeat:
        raise compat.InvalidTask(
            f"{where}: lease_ttl ({lease_ttl.total_seconds():g}s) must be longer than "
            f"DISPATCH_JOBS['HEARTBEAT_INTERVAL'] ({heartbeat.total_seconds():g}s), or "
            "the lease lapses between two renewals and the job runs twice."
        )


def _check_run_after(where: str, run_after: datetime) -> None:
    if not limits.is_storable_time(run_after):
        raise compat.InvalidTask(
            f"{where}: run_after {run_after.isoformat()} is outside "
            f"{limits.RUN_AFTER_MIN.date()}..{limits.RUN_AFTER_MAX.date()} (UTC), the "
            "range every supported database can store."
        )


def _check_text(where: str, field: str, value: str) -> None:
    problem = check_storable_text(value)
    if problem:
        raise compat.InvalidTask(f"{where}: {field} {value[:40]!r} {problem}.")


def check_arguments(
    task: compat.Task,
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    max_payload_bytes: int | None = None,
) -> None:
    """JSON-only values, a signature they bind to, and a payload under the cap
    (``max_payload_bytes``, default the setting: a caller checking many calls
    reads it once)."""
    encode_arguments(task, args, kwargs, max_payload_bytes)


def encode_arguments(
    task: compat.Task,
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    max_payload_bytes: int | None = None,
) -> EncodedJSON:
    """``check_arguments``, returning the payload with the encoding the cap
    measured: enqueue writes that text, so a payload is encoded once."""
    cap = settings.max_payload_bytes if max_payload_bytes is None else max_payload_bytes
    # Every value encodes to at least a byte: more values than the cap has bytes
    # is over it, whatever they are (and a walk of shared sub-lists stops there).
    for root, values in (("args", args), ("kwargs", kwargs)):
        found = locate_unstorable(
            values, max_depth=_ARGUMENTS_DEPTH, root=root, max_items=cap, json_only=True
        )
        if found:
            found = _per_argument(root, values, cap) or found
            raise InvalidArguments(
                f"Task {task.module_path}: argument {found.sentence()}. "
                "Pass JSON values only (str, int, float, bool, None, list, dict with str "
                "keys), with no NUL character or surrogate in any string."
            )
    _check_binding(task, args, kwargs)
    return _check_size(task, args, kwargs, cap)


def arguments_encoder(
    task: compat.Task, max_payload_bytes: int
) -> Callable[[Sequence[Any], Mapping[str, Any]], EncodedJSON]:
    """``encode_arguments`` for many calls of one task under one cap. The checks a
    call passes in the common case (plainly storable values, a plain signature
    they bind to, a payload under the cap) run with what the calls share looked
    up once; a call they do not all accept goes through ``encode_arguments``,
    which decides and words the error. The same checks, the same encoding: it
    accepts exactly what ``encode_arguments`` accepts, at about two thirds of the
    cost per call (a bulk enqueue's largest share of Python)."""
    cap = max_payload_bytes
    plain = _plain_parameters(task.func)
    if plain is None:
        return functools.partial(encode_arguments, task, max_payload_bytes=cap)
    extra = 1 if task.takes_context else 0
    name = task.module_path
    # How many positional arguments bind with no keywords, asked once.
    alone = frozenset(
        count - extra
        for count in range(len(plain.positional) + 1)
        if count >= extra and plain.binds(count, {})
    )

    def encoded(args: Sequence[Any], kwargs: Mapping[str, Any]) -> EncodedJSON:
        # (Most calls pass no keywords: an empty container is plainly storable.)
        if (not args or plainly_storable(args, _ARGUMENTS_DEPTH, cap)) and (
            len(args) in alone
            if not kwargs
            else plainly_storable(kwargs, _ARGUMENTS_DEPTH, cap)
            and plain.binds(len(args) + extra, kwargs)
        ):
            payload = {"args": list(args), "kwargs": dict(kwargs)}
            text = encode_payload(name, payload)
            if encoded_size(text) <= cap:
                return EncodedJSON(payload, text)
        return encode_arguments(task, args, kwargs, cap)

    return encoded


def _per_argument(
    root: str, values: Sequence[Any] | Mapping[str, Any], max_items: int
) -> Unstorable | None:
    """The first unstorable argument, described by itself: its depth counted from
    the argument (``ARGUMENT_MAX_DEPTH``), not from the args list around it. None
    when the problem is not inside one argument (a kwarg's name, the count)."""
    pairs = values.items() if isinstance(values, Mapping) else enumerate(values)
    for key, value in pairs:
        found = locate_unstorable(
            value,
            max_depth=limits.ARGUMENT_MAX_DEPTH,
            root=f"{root}[{key!r}]",
            max_items=max_items,
            json_only=True,
        )
        if found:
            return found
    return None


def check_scope(task: compat.Task, scope: Scope) -> None:
    """The scope's ids fit their columns: strings of at most ``SCOPE_MAX``
    characters, storable as text."""
    for label, value in (("app_id", scope.app_id), ("org_id", scope.org_id)):
        if not isinstance(value, str):
            raise compat.InvalidTask(
                f"Task {task.module_path}: scope {label} must be a str, got "
                f"{type(value).__name__} {value!r}."
            )
        if len(value) > SCOPE_MAX:
            raise compat.InvalidTask(
                f"Task {task.module_path}: scope {label} is longer than {SCOPE_MAX} "
                f"characters: {value[:20]!r}..."
            )
        problem = check_storable_text(value)
        if problem:
            raise compat.InvalidTask(
                f"Task {task.module_path}: scope {label} {value[:40]!r} {problem}."
            )


def check_schedulable(
    task: compat.Task, requests: ResourceSet, worker_capacities: Sequence[Mapping[str, int]]
) -> None:
    """The seed's unschedulable rule. ``worker_capacities`` are the live workers'
    declared capacities. Only when at least one worker declares a capacity does the
    rule apply; a live worker with no capacity declared is unbounded and could run
    anything, so it makes every requirement schedulable."""
    if not requests or not any(worker_capacities):
        return
    if any(not capacity or fits(requests, capacity) for capacity in worker_capacities):
        return
    declared = "; ".join(_render(capacity) for capacity in worker_capacities if capacity)
    raise Unschedulable(
        f"Task {task.module_path}: requirement {_render(requests)} fits no live worker "
        f"(capacities: {declared}); no job was written."
    )


def aware_run_after(task: compat.Task) -> datetime | None:
    """``run_after`` as the value to store (aware when USE_TZ, as Django expects)."""
    run_after = task.run_after
    if run_after is None:
        return None
    if not django_settings.USE_TZ and timezone.is_aware(run_after):
        return timezone.make_naive(run_after)
    return run_after


def live_window() -> timedelta:
    """How recently a worker must have been seen to count as live: the same window
    after which maintenance removes its row (``WORKER_STALE_AFTER``)."""
    return settings.worker_stale_after


@functools.lru_cache(maxsize=1024)
def _cached_signature(func: Callable[..., Any]) -> inspect.Signature:
    return inspect.signature(func)


def _signature(func: Callable[..., Any]) -> inspect.Signature:
    """The function's signature, computed once per function: ``inspect.signature``
    costs more than the rest of an enqueue's validation together."""
    try:
        return _cached_signature(func)
    except TypeError:  # an unhashable callable
        return inspect.signature(func)


@dataclass(frozen=True)
class _PlainParameters:
    """A signature of plain parameters (no positional-only, no ``*args`` or
    ``**kwargs``), in the form ``binds`` reads."""

    positional: tuple[str, ...]  # positional-or-keyword names, in order
    names: frozenset[str]  # every name a keyword may give
    required: frozenset[str]  # the names without a default
    least: int  # positional arguments that cover every required positional one
    required_keyword_only: bool

    def binds(self, count: int, keywords: Mapping[str, Any]) -> bool:
        """Whether ``count`` positional arguments and ``keywords`` bind, as
        ``Signature.bind`` decides for such a signature."""
        if count > len(self.positional):
            return False
        if not keywords:
            return count >= self.least and not self.required_keyword_only
        taken = self.positional[:count]
        return all(key in self.names and key not in taken for key in keywords) and all(
            name in taken or name in keywords for name in self.required
        )


def _plain_parameters(func: Callable[..., Any]) -> _PlainParameters | None:
    """The function's parameters when they are plain, computed once per function."""
    try:
        return _cached_plain_parameters(func)
    except TypeError:  # an unhashable callable
        return None


@functools.lru_cache(maxsize=1024)
def _cached_plain_parameters(func: Callable[..., Any]) -> _PlainParameters | None:
    parameters = list(_signature(func).parameters.values())
    if any(p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) for p in parameters):
        return None
    positional = [p for p in parameters if p.kind == p.POSITIONAL_OR_KEYWORD]
    required = [p for p in parameters if p.default is p.empty]
    return _PlainParameters(
        positional=tuple(p.name for p in positional),
        names=frozenset(p.name for p in parameters),
        required=frozenset(p.name for p in required),
        least=max((i + 1 for i, p in enumerate(positional) if p.default is p.empty), default=0),
        required_keyword_only=any(p.kind == p.KEYWORD_ONLY for p in required),
    )


def _check_binding(task: compat.Task, args: Sequence[Any], kwargs: Mapping[str, Any]) -> None:
    # The worker passes the TaskContext first; the caller never does.
    count = len(args) + 1 if task.takes_context else len(args)
    plain = _plain_parameters(task.func)
    if plain is not None and plain.binds(count, kwargs):
        # Signature.bind() costs more than the rest of the argument checks: it is
        # left for the other signatures and for building the error.
        return
    signature = _signature(task.func)
    bound_args = (None, *args) if task.takes_context else tuple(args)
    try:
        signature.bind(*bound_args, **kwargs)
    except TypeError as exc:
        shown = signature
        if task.takes_context:
            params = list(signature.parameters.values())[1:]
            shown = signature.replace(parameters=params)
        raise InvalidArguments(
            f"Task {task.module_path}: arguments do not match its signature {shown}: {exc}."
        ) from exc


def _check_size(
    task: compat.Task, args: Sequence[Any], kwargs: Mapping[str, Any], cap: int
) -> EncodedJSON:
    payload = {"args": list(args), "kwargs": dict(kwargs)}
    text = encode_payload(task.module_path, payload)
    size = encoded_size(text)
    if size <= cap:
        return EncodedJSON(payload, text)
    parts = [(f"args[{i}]", v) for i, v in enumerate(args)]
    parts += [(f"kwargs[{k!r}]", v) for k, v in kwargs.items()]
    largest, largest_size = max(
        ((where, payload_size(task.module_path, value)) for where, value in parts),
        key=lambda item: item[1],
        default=("(none)", 0),
    )
    raise InvalidArguments(
        f"Task {task.module_path}: payload is {size} bytes encoded, over the cap of {cap} "
        f"bytes (DISPATCH_JOBS['MAX_PAYLOAD_BYTES']); the largest argument is {largest} "
        f"at {largest_size} bytes. Store large data elsewhere and pass a reference."
    )


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _render(resources: Mapping[str, int]) -> str:
    return "{" + ", ".join(f"{k}={v}" for k, v in sorted(resources.items())) + "}"
