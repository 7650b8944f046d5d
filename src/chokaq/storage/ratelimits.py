"""The storage seam's rate limits and partitions, checked once and observed once: what the
code declares, what operators set, the list with each limit's load, and which claim a fetch
takes.

A fetch takes the plain claim (unchanged by this module) unless a limit is in force for one of
the queues it serves or for any job type, or some type has partitioned jobs: then it takes the
limited claim (``chokaq.storage.throttle``). Which of the two is decided from ``ActiveLimits``,
read at most ``ACTIVE_MAX_AGE_SECONDS`` before, and again at once after a claim that found
nothing or a change made through this backend; a limit set elsewhere is in force within that
age. ``Backend`` is assembled from this group and the others (see ``chokaq.storage.backend``).
This module must not import a database driver or hold SQL.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from ..errors import ValidationError
from ..limits import check_actor, check_name
from ..models import LimitInfo, TypeLimit
from ..rates import check_rate
from . import checks
from .checks import UNSET
from .group import OperationGroup
from .observed import operation

__all__ = ["ACTIVE_MAX_AGE_SECONDS", "ActiveLimits", "LimitOperations"]

# How old the set of active limits may be when a fetch decides which claim to take.
ACTIVE_MAX_AGE_SECONDS = 0.5
MAX_PARTITION_CONCURRENCY = 10_000
SCOPES = ("queue", "type")


@dataclass(frozen=True, slots=True)
class ActiveLimits:
    """Queues with a rate in force, types with a limit in force, types with partitioned
    pending jobs."""

    queues: frozenset[str] = frozenset()
    types: frozenset[str] = frozenset()
    partitioned: frozenset[str] = frozenset()

    def apply_to(self, queues: Sequence[str] | None) -> bool:
        if self.types or self.partitioned:
            return True
        if queues is None:
            return bool(self.queues)
        return not self.queues.isdisjoint(queues)


def _scope(value: object) -> str:
    if value not in SCOPES:
        raise ValidationError("scope", f"must be 'queue' or 'type' (got {value!r})")
    return str(value)


def check_concurrency(field: str, value: object) -> int | None:
    if value is None:
        return None
    return checks.positive_int(field, value, MAX_PARTITION_CONCURRENCY)


def check_type_limit(limit: object) -> TypeLimit:
    if not isinstance(limit, TypeLimit):
        raise ValidationError("limits", f"must hold TypeLimit values (got {type(limit).__name__})")
    check_name("type", limit.type)
    rate = None if limit.rate_limit is None else str(check_rate("rate_limit", limit.rate_limit))
    concurrency = check_concurrency("partition_concurrency", limit.partition_concurrency)
    return TypeLimit(limit.type, rate, concurrency)


class LimitOperations(OperationGroup):
    """The storage seam's rate limits."""

    _active: ActiveLimits | None = None
    _active_read_at: float = 0.0

    @operation
    async def limits_declare(self, *, limits: Sequence[TypeLimit]) -> None:
        """Record what the code of a worker's job types declares (one ``TypeLimit`` per type
        it serves; a type with neither limit clears its declaration). A limit an operator set
        stays in force until ``limit_reset``."""
        declared = [check_type_limit(limit) for limit in limits]
        if len(declared) > self._max_batch:
            raise ValidationError("limits", f"must hold at most {self._max_batch} types")
        if declared:
            await self.driver.limits_declare(declared)
            self._active = None
            await self.driver.jobs_wake(None)  # a limit raised or cleared lets held jobs start

    @operation
    async def limit_set(
        self,
        *,
        scope: str,
        name: str,
        rate_limit: str | None = UNSET,
        partition_concurrency: int | None = UNSET,
        actor: str | None = None,
    ) -> LimitInfo:
        """Set a queue's or a type's limits, over what the code declares (``None`` clears
        one, ``UNSET`` leaves it alone). A queue takes a rate only (its concurrency is
        ``max_workers``); a type a rate and a cap on running jobs, each per partition value
        for a job that has one."""
        scope = _scope(scope)
        check_name("name", name)
        who = check_actor("actor", actor)
        rate = None
        if rate_limit is not UNSET and rate_limit is not None:
            rate = str(check_rate("rate_limit", rate_limit))
        if partition_concurrency is not UNSET:
            if scope == "queue":
                raise ValidationError(
                    "partition_concurrency",
                    "applies to job types only (a queue's concurrency is max_workers)",
                )
            partition_concurrency = check_concurrency(
                "partition_concurrency", partition_concurrency
            )
        info = await self.driver.limit_set(
            scope,
            name,
            rate if rate_limit is not UNSET else UNSET,
            partition_concurrency,
            who,
        )
        self._active = None
        await self.driver.jobs_wake(None)
        return info

    @operation
    async def limit_reset(self, *, scope: str, name: str, actor: str | None = None) -> LimitInfo:
        """Put a limit back to what the code declares (for a queue: none). ``NotFoundError``
        when there is no such limit."""
        info = await self.driver.limit_reset(
            _scope(scope), check_name("name", name), check_actor("actor", actor)
        )
        self._active = None
        await self.driver.jobs_wake(None)
        return info

    @operation
    async def limits_list(self, *, now: datetime | None = None) -> list[LimitInfo]:
        """Every limited queue and type (and every type the code declared), with its load:
        the current rate, pending and held jobs, running jobs and its busiest partitions."""
        return await self.driver.limits_list(checks.now(now))

    async def _active_limits(self, fresh: bool = False) -> ActiveLimits:
        if (
            fresh
            or self._active is None
            or (time.monotonic() - self._active_read_at > ACTIVE_MAX_AGE_SECONDS)
        ):
            queues, types, partitioned = await self.driver.limits_active()
            self._active = ActiveLimits(frozenset(queues), frozenset(types), frozenset(partitioned))
            self._active_read_at = time.monotonic()
        return self._active
