"""The storage seam's operator actions, checked once and observed once: cancel and edit of hot
jobs, the DLQ's edit, resurrection (by id or by filter, with a preview) and purge, and the test
clock's move of due times (``jobs_advance``).

``Backend`` is assembled from this group and the others (see ``chokaq.storage.backend`` for the
rules every operation follows). Every action names its actor. This module must not import a
database driver or hold SQL.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from ..limits import check_job_id
from ..models import (
    CancelResult,
    JobFilter,
    Preview,
)
from . import checks
from .group import OperationGroup
from .observed import operation

# How many generations of spawned children a cancel follows.
MAX_SPAWN_DEPTH = 16

__all__ = ["OperatorOperations"]

_EMPTY_CANCEL = CancelResult(cancelled=(), requested=(), not_found=())


class OperatorOperations(OperationGroup):
    """The storage seam's operator actions."""

    # -- operators ----------------------------------------------------------------------------

    @operation
    async def jobs_cancel(
        self, *, ids: Sequence[str], actor: str, now: datetime | None = None
    ) -> CancelResult:
        """Pending, Fetched or Waiting -> DLQ CANCELLED at once (cancelled_by = actor, counters and
        buckets as a fail move); Processing -> a durable cancel request (cancel_requested_at,
        cancelled_by) that the owning worker hears through its heartbeat or a notification.
        Suspended durable jobs go to the DLQ as pending ones do; the unfinished children a
        durable job spawned (``ctx.spawn``) are cancelled with it, right after (the result
        reports the ids given only)."""
        unique = checks.job_ids("ids", ids, self._max_batch)
        who = checks.actor(actor)
        clock = checks.now(now)
        if not unique:
            return _EMPTY_CANCEL
        result = await self.driver.jobs_cancel(unique, who, clock)
        # A durable job's spawned children that have not finished go with it (docs/durable.md),
        # right after, generation by generation (the statements of one cancel each).
        ended = list(result.cancelled + result.requested)
        seen = set(unique)
        for _ in range(MAX_SPAWN_DEPTH):
            if not ended:
                break
            children = [c for c in await self.driver.steps_children(ended) if c not in seen]
            if not children:
                break
            seen.update(children)
            spawned = await self.driver.jobs_cancel(tuple(children), who, clock)
            ended = list(spawned.cancelled + spawned.requested)
        return result

    @operation
    async def jobs_edit(
        self,
        *,
        id: str,
        actor: str,
        payload: str | None = None,
        tags: Sequence[str] | None = None,
        priority: int | None = None,
        now: datetime | None = None,
    ) -> bool:
        """Edit a Pending hot job (``None`` leaves a field alone). False unless it is Pending."""
        check_job_id("id", id)
        who = checks.actor(actor)
        repairs = checks.edits(self._limits, payload, tags, priority)
        return await self.driver.jobs_edit(id, who, repairs, checks.now(now))

    @operation
    async def jobs_advance(
        self, *, seconds: float, queues: Sequence[str] | None = None, now: datetime | None = None
    ) -> int:
        """Bring forward by ``seconds`` (> 0, at most ten years) the due time of every Pending
        hot job of ``queues`` (None: every queue) not yet due at ``now``: delayed jobs and
        retries alike, so that their order is kept, as if the clock had moved on. A test clock
        (``chokaq.testing.run_until_idle``), never an operator action; it wakes the workers.
        Returns how many jobs moved."""
        shift = checks.seconds("seconds", seconds, low=0.0, high=315_360_000.0, exclusive=True)
        names = checks.names("queues", queues)
        return await self.driver.jobs_advance(shift, names, checks.now(now))

    @operation
    async def dlq_edit(
        self,
        *,
        id: str,
        actor: str,
        payload: str | None = None,
        tags: Sequence[str] | None = None,
        priority: int | None = None,
    ) -> bool:
        """Edit a DLQ row in place (``None`` leaves a field alone). False when not in the DLQ."""
        check_job_id("id", id)
        who = checks.actor(actor)
        repairs = checks.edits(self._limits, payload, tags, priority)
        return await self.driver.dlq_edit(id, who, repairs)

    @operation
    async def dlq_resurrect(
        self,
        *,
        ids: Sequence[str],
        actor: str,
        payload: str | None = None,
        tags: Sequence[str] | None = None,
        priority: int | None = None,
        now: datetime | None = None,
    ) -> list[str]:
        """DLQ -> hot Pending (attempts 0, idempotency key cleared, due now, created_at and
        created_by kept, last_error = the DLQ row's error, last_modified_by = actor), optionally
        with a repaired payload, tags or priority (applied to every id), in one transaction.
        Lifetime counters and buckets are untouched. Returns the ids moved, in input order (an
        id not in the DLQ is skipped)."""
        unique = checks.job_ids("ids", ids, self._max_batch)
        who = checks.actor(actor)
        repairs = checks.edits(self._limits, payload, tags, priority)
        clock = checks.now(now)
        if not unique:
            return []
        return await self.driver.dlq_resurrect(unique, who, repairs, clock)

    def _cap(self, cap: object) -> int:
        return checks.positive_int("cap", cap, self._max_batch)

    @operation
    async def dlq_preview(self, *, filter: JobFilter, cap: int, sample: int = 10) -> Preview:
        """What a bulk-by-filter action over the DLQ would touch (newest failure first): how
        many rows match, how many a ``cap`` (1..max batch) would affect, and the ids of the
        first ``sample`` (0..1000) of them."""
        checked = checks.job_filter(filter)
        most = self._cap(cap)
        size = checks.bounded_int("sample", sample, 0, checks.MAX_SAMPLE)
        return await self.driver.dlq_preview(checked, most, size)

    @operation
    async def dlq_resurrect_by_filter(
        self, *, filter: JobFilter, actor: str, cap: int, now: datetime | None = None
    ) -> list[str]:
        """Resurrect at most ``cap`` DLQ rows matching ``filter`` (newest failure first)."""
        checked = checks.job_filter(filter)
        who = checks.actor(actor)
        most = self._cap(cap)
        return await self.driver.dlq_resurrect_by_filter(checked, who, most, checks.now(now))

    @operation
    async def dlq_purge(self, *, ids: Sequence[str], actor: str) -> list[str]:
        """Delete DLQ rows by id; returns the ids deleted, in input order. Counters untouched."""
        unique = checks.job_ids("ids", ids, self._max_batch)
        checks.actor(actor)
        if not unique:
            return []
        return await self.driver.dlq_purge(unique)

    @operation
    async def dlq_purge_by_filter(self, *, filter: JobFilter, actor: str, cap: int) -> list[str]:
        """Delete at most ``cap`` DLQ rows matching ``filter`` (newest failure first)."""
        checked = checks.job_filter(filter)
        checks.actor(actor)
        return await self.driver.dlq_purge_by_filter(checked, self._cap(cap))
