"""The store's request and response values (the seed's option structs)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Literal

from ..models import Job


@dataclass(frozen=True, kw_only=True)
class ClaimOptions:
    """What a claimer asks for: the seed's ``DequeueOpts``.

    queues:        claim only from these queues. An EMPTY list claims nothing, on
                   every database (no query is run): callers must name queues,
                   or ask for every queue explicitly:
    every_queue:   claim from any queue; ``queues`` is then ignored. (A worker
                   whose TASKS backend accepts any queue, or names none.)
    limit:         the most jobs to claim; counts eligible jobs only. ``<= 0``
                   claims nothing and runs no query.
    budget:        free capacity in canonical units. An ABSENT key is
                   unconstrained; a key present with 0 is a real limit. A job is
                   eligible when each requirement is ``<=`` the budget. Custom keys
                   in the budget are ignored by the predicate (offer them through
                   ``custom_keys``), though their presence makes the claim bounded.
    custom_keys:   custom resource keys offered. A job is eligible only when every
                   custom key it needs is offered (subset, never substring). When
                   the whole claim is unbounded (no budget key, no custom key) the
                   resource model is off and custom-key jobs are claimable too.
    prefer_hashes: primary input hashes staged locally. Matching jobs sort first
                   *within* a priority band. Never filters; empty strings dropped;
                   not a term of "unbounded".
    reserved_for:  claim only this job id, still subject to every other rule.
    worker_id:     the lease holder. Required when ``lease_ttl`` is set.
    lease_ttl:     when set, the claim grants a lease in the same transaction:
                   worker_id, expiry = database now + lease_ttl, lease_epoch + 1.
                   ``None`` grants nothing and leaves every lease column untouched.
                   (The seed passes an absolute LeaseUntil; a duration measured on
                   the database's clock keeps worker clock skew out of ownership.)
    suspects:      poison attribution (``models.Quarantine``): "include" (the
                   plain claim: suspects are jobs like any other), "exclude" (a
                   worker filling shared slots leaves them to a lone run) or
                   "only" (a worker about to run one job alone takes a suspect).
    alone:         the claimed jobs will run with nothing beside them: they are
                   marked ``Quarantine.ALONE``, so a lapse of their lease counts
                   towards failing them as poison.
    limits_held:   internal to ``store.limited_claim``: the caller holds the
                   queues' control row lock and capped ``limit`` by their limits,
                   so queues with limits are not skipped (they are otherwise).
    exclude_orgs:  internal to ``store.limited_claim``: scope orgs at their
                   per-org limit, whose jobs are left alone.
    executions:    the execution rungs (``Job.execution``) the claimer provides
                   (``rungs.provided_by``): a job needing a more isolated rung is
                   left for a worker that has it. ``None`` claims any rung.
    skip:          job ids never to claim (a worker's own short list of jobs it
                   handed back because they can never fit its capacity).
    """

    queues: Sequence[str]
    limit: int
    every_queue: bool = False
    budget: Mapping[str, int] | None = None
    custom_keys: Sequence[str] = ()
    prefer_hashes: Sequence[str] = ()
    reserved_for: int | None = None
    worker_id: str = ""
    lease_ttl: timedelta | None = None
    suspects: Literal["include", "exclude", "only"] = "include"
    alone: bool = False
    limits_held: bool = False
    exclude_orgs: Sequence[str] = ()
    executions: Sequence[str] | None = None
    skip: Sequence[int] = ()

    def is_unbounded(self) -> bool:
        """True when the caller does not use the resource model at all. Tests key
        presence, not zero values: ``{"memory": 0}`` is bounded."""
        return not self.budget and not self.custom_keys

    def grants(self) -> bool:
        return self.lease_ttl is not None

    def preferred_hashes(self) -> list[str]:
        return sorted({h for h in self.prefer_hashes if h})


@dataclass(frozen=True, kw_only=True)
class ListOptions:
    """Filters of the cursor-paged list (the seed's ``ListJobsOpts``). Empty
    values mean "all"; ``name_prefix`` is literal and case-sensitive."""

    states: Sequence[str] = ()
    queue: str = ""
    name_prefix: str = ""
    scope_app_id: str = ""
    scope_org_id: str = ""
    cursor: str = ""
    limit: int = 0


@dataclass(frozen=True)
class Page:
    """One page of jobs, newest first.

    ``next_cursor`` is empty when there is no further page. ``complete`` is always
    True on the SQL backends: they finish the search before answering (which is
    not a promise that it was cheap: a rare ``name_prefix`` may scan).
    """

    jobs: list[Job]
    next_cursor: str = ""
    complete: bool = True
    extra: dict[str, object] = field(default_factory=dict)
