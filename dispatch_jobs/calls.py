"""Calls of a task, checked and turned into job rows: ``Call`` (one validated
call), ``check_calls`` (every rule ``enqueue`` applies to a call, before any
write), and the columns of its row (``task_columns``, ``call_columns``,
``new_jobs``).

The store is imported inside functions, never at module level, as in the
backend: Django builds backends when the first ``@task`` decorator runs, which is
at import time of a tasks module, possibly before the app registry is ready.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from . import estimates, inputs
from .conf import settings
from .payloads import EncodedJSON
from .resources import ResourceSet
from .scope import Scope, current_scope
from .task import DispatchTask
from .validation import arguments_encoder, aware_run_after, check_schedulable, check_scope

if TYPE_CHECKING:
    from .store import NewJobs


class Call(NamedTuple):
    """One validated call: its arguments, their encoded payload, the scope and
    resources it resolved, and the columns of its bound inputs."""

    args: Sequence[Any]
    kwargs: Mapping[str, Any]
    payload: EncodedJSON
    scope: Scope
    requests: ResourceSet
    limits: ResourceSet
    inputs: Mapping[str, Any]


def check_calls(
    definition: DispatchTask,
    calls: Iterable[tuple[Sequence[Any], Mapping[str, Any]]],
    capacities: Sequence[Mapping[str, int]],
) -> list[Call]:
    """Validate every call and resolve what it contributes to its row (the task
    is validated already); raises before any write. Per call, in this order: its
    arguments (``arguments_encoder``), its scope, its resources."""
    # Read once: a settings read costs more than a check.
    encoded = arguments_encoder(definition, settings.max_payload_bytes)
    bound: dict[str, Any] | None = None  # the same for every call
    estimated: dict[str, int] = {}
    own_scope = definition.scope
    # Nothing but a resource_func varies the resources between calls: then the
    # first call's, checked once, are every call's.
    fixed = definition.resource_func is None
    resolved: tuple[ResourceSet, ResourceSet] | None = None
    checked_scope: Scope | None = None
    checked: list[Call] = []
    for args, kwargs in calls:
        if bound is None:
            bound = bound_inputs(definition)
            estimated = estimated_resources(definition, bound, capacities)
        payload = encoded(args, kwargs)
        scope = own_scope or current_scope()
        if scope is not checked_scope:
            # Nothing between two calls of a batch sets another scope: once.
            check_scope(definition, scope)
            checked_scope = scope
        resources = resolved
        if resources is None:
            resources = definition.resolve_resources(args, kwargs, estimated)
            check_schedulable(definition, resources[0], capacities)
            if fixed:
                resolved = resources
        checked.append(Call(args, kwargs, payload, scope, *resources, bound))
    return checked


def frozen(call: Call) -> Call:
    """A checked call that no later change to the caller's objects can alter: its
    payload as the value decoded from the text that was checked (the ORM path
    stores the value; a list the caller appends to before the commit would
    otherwise be written as it is then, unchecked)."""
    text = call.payload.text
    payload = json.loads(text)
    return call._replace(
        args=payload["args"], kwargs=payload["kwargs"], payload=EncodedJSON(payload, text)
    )


def new_jobs(
    definition: DispatchTask, calls: Sequence[Call], trace_context: dict[str, str] | None
) -> NewJobs:
    """The rows of validated calls, as columns: the task's options are shared by
    every row; each payload is its own; scope and resources are shared unless a
    call differs (a ``resource_func``). The enqueue span's trace context, when
    tracing is on, is shared too (absent otherwise: the column stays NULL)."""
    from .store import NewJobs

    shared = task_columns(definition)
    if trace_context is not None:
        shared["trace_context"] = trace_context
    own: dict[str, list[Any]] = {"payload": [call.payload for call in calls]}
    first = calls[0]
    decided = (first.scope, first.requests, first.limits)
    if all((call.scope, call.requests, call.limits) == decided for call in calls):
        shared.update(call_columns(first))
    else:
        rows = [call_columns(call) for call in calls]
        own.update({attname: [row[attname] for row in rows] for attname in rows[0]})
    return NewJobs(len(calls), shared, own)


def task_columns(definition: DispatchTask) -> dict[str, Any]:
    """The columns a task's options decide: the same for every call of it."""
    columns: dict[str, Any] = dict(
        name=definition.job_name,
        queue=definition.queue_name,
        priority=int(definition.priority),
        max_retries=definition.max_retries,
        timeout=definition.timeout,
        lease_ttl=definition.lease_ttl,
        resource_class=definition.resource_class,
        execution=definition.execution,
    )
    run_at = aware_run_after(definition)
    if run_at is not None:
        # Omitted otherwise: the column's default is the database's now.
        columns["run_at"] = run_at
    return columns


def call_columns(call: Call) -> dict[str, Any]:
    """The columns one call's scope and resolved resources decide."""
    from .store import resource_columns

    columns = resource_columns(call.requests)
    columns["scope_app_id"] = call.scope.app_id
    columns["scope_org_id"] = call.scope.org_id
    columns["resources"] = dict(call.requests)
    columns["resource_limits"] = dict(call.limits)
    columns.update(call.inputs)
    return columns


def estimated_resources(
    definition: DispatchTask, bound: Mapping[str, Any], capacities: Sequence[Mapping[str, int]]
) -> dict[str, int]:
    """What the usage estimator raises, once per enqueue call (every call of it
    shares the task and its inputs, hence the bucket); {} unless it is wanted."""
    if not estimates.wants_estimate(definition):
        return {}
    found = estimates.estimate_for(definition.job_name, bound.get("input_bytes", 0))
    if found is None:
        return {}
    return estimates.clamp(
        found.as_resources(), definition.resources, definition.resource_limits, capacities
    )


def bound_inputs(definition: DispatchTask) -> dict[str, Any]:
    """The input columns of the task's bindings, every input rule checked (one
    query, and none when the task declares no inputs)."""
    where = f"Task {definition.module_path}"
    return inputs.resolve(where, definition.inputs, definition.input_bindings)
