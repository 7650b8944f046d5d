"""The storage seam's jobs area, checked once and observed once: enqueue (with its dependency
graph), and the operator's moves of hot jobs: cancel, edit, and the test clock's move of due
times (``jobs_advance``).

``Backend`` is assembled from this group and the others (see ``chokaq.storage.backend`` for the
rules every operation follows). The worker path (fetch to finalize) is the ``claims`` area.
This module must not import a database driver or hold SQL.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ..limits import check_job_id, validate_new_jobs
from ..models import (
    CancelResult,
    EnqueueResult,
    NewJob,
)
from . import checks
from .graph import plan
from .group import OperationGroup
from .observed import operation

__all__ = ["JobOperations"]

# How many generations of spawned children a cancel follows.
MAX_SPAWN_DEPTH = 16
_EMPTY_CANCEL = CancelResult(cancelled=(), requested=(), not_found=())


class JobOperations(OperationGroup):
    """The storage seam's jobs area: enqueue, cancel, edit, advance."""

    @operation
    async def jobs_enqueue(
        self,
        jobs: Sequence[NewJob],
        *,
        now: datetime | None = None,
        connection: Any = None,
    ) -> list[EnqueueResult]:
        """Insert jobs into hot as Pending, in one or a few round trips, in input order.

        Validates every job first (``ValidationError`` naming ``jobs[i].field``; nothing written).
        Creates missing ``queues`` and ``stats_summary`` rows race-safely. A job whose
        idempotency key is held by a hot row gets that row's id with ``duplicate=True`` (also
        when two jobs of the same batch share a key: the first wins). ``connection``, where
        ``capabilities.caller_transactions``, is the caller's open connection: the insert joins
        their transaction and the wake-up is sent only when it commits.

        A job with ``after`` (parent ids: jobs of the same batch, or stored ones) waits until
        every parent has succeeded, or with ``after_outcome="any"`` finished in the archive or
        the DLQ (see ``chokaq.storage.graph``); the batch is refused (``ValidationError``
        naming ``jobs[i].after``, nothing written) for a parent that is not stored, a cycle, or
        an idempotency key on a job with or in a dependency, and naming
        ``jobs[i].after_outcome`` or ``jobs[i].pass_results`` for an outcome other than
        "success" or "any", or results to pass without ``after``.
        """
        caller = checks.caller_connection(connection, self.capabilities)
        clock = checks.now(now)
        checked = validate_new_jobs(jobs, self._limits, clock)
        if not checked:
            return []
        checked, graph = plan(checked)
        return await self.driver.jobs_enqueue(checked, clock, caller, graph)

    # -- operator moves ---------------------------------------------------------------------

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
