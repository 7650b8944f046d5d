"""The batches area of the storage seam (docs/batches.md): a batch handler's claim of many jobs
of one type at once, the record of which batch each job ran in, its reads and its tidy.

Owns checking the arguments of these operations and turning the claimed rows into a ``Claim``
as a plain claim does (undecodable rows rejected, expired ones buried: the claims area's
helpers). This module must not import a database driver or hold SQL.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from ..ids import new_job_id
from ..limits import MAX_BATCH_SIZE, MAX_BATCH_WAIT_SECONDS, check_job_id, check_name, check_time
from ..models import BatchRequest, BatchSize, Claim, JobBatch, LeaderTerm
from . import checks
from .claims import ClaimOperations, expired_of
from .driver import UndecodableRow
from .maintenance import fence_of
from .observed import operation

__all__ = ["BatchOperations"]


class BatchOperations(ClaimOperations):
    """A batch handler's claim and the record of its batches."""

    @operation
    async def jobs_claim_batch(
        self,
        *,
        worker_id: str,
        type: str,
        limit: int,
        wait_seconds: float,
        key: str | None = None,
        queues: Sequence[str] | None = None,
        now: datetime | None = None,
    ) -> Claim:
        """Claim one batch of ``type`` for a batch handler straight into Processing, in one
        statement (docs/batches.md): the oldest due Pending job of the type in ``queues``
        (None: every queue; paused and inactive queues are skipped) picks the batch's queue
        and its value of the argument ``key`` (None: no key); up to ``limit`` (1..10,000)
        due jobs of the type sharing that queue and value, in the fetch order, within the
        room the queue's ``max_workers`` leaves, are claimed when that many are due or when
        the oldest has been due ``wait_seconds`` (0..3,600). Each gets its own lease and
        attempt, as a plain claim's job does, and a ``job_batches`` row under the batch id
        returned (``Claim.batch_id``). Nothing claimed: ``retry_at`` says when the oldest
        pending job of the type may be claimed anyway. Rate limits and partitions do not apply
        (a batch type declares neither). Expired and undecodable rows are buried as a plain
        claim buries them."""
        check_name("worker_id", worker_id)
        request = BatchRequest(
            batch_id=new_job_id(),
            worker_id=worker_id,
            type=check_name("type", type),
            limit=checks.bounded_int("limit", limit, 1, MAX_BATCH_SIZE),
            wait_seconds=checks.seconds(
                "wait_seconds", wait_seconds, low=0.0, high=MAX_BATCH_WAIT_SECONDS, exclusive=False
            ),
            key=checks.argument_name("key", key),
            queues=checks.names("queues", queues),
        )
        clock = checks.now(now)
        if request.queues == []:
            return Claim([])
        rows, retry_at = await self.driver.jobs_claim_batch(request, clock)
        jobs = [row for row in rows if not isinstance(row, UndecodableRow)]
        if len(jobs) < len(rows):
            await self._reject_undecodable(
                [row for row in rows if isinstance(row, UndecodableRow)], clock
            )
        expired = expired_of(jobs, clock)
        if expired:
            await self._expire(expired, clock)
            gone = {job.id for job in expired}
            jobs = [job for job in jobs if job.id not in gone]
        return Claim(jobs, retry_at, tuple(expired), request.batch_id if rows else None)

    @operation
    async def job_batches(self, *, id: str, limit: int = 20) -> list[JobBatch]:
        """The batches job ``id`` ran in (one per attempt a batch handler ran it), newest
        first, at most ``limit`` (1..100), each with the ids of every job claimed with it;
        empty for a job no batch handler ran (or whose batches were pruned)."""
        check_job_id("id", id)
        most = checks.bounded_int("limit", limit, 1, 100)
        return await self.driver.job_batches(id, most)

    @operation
    async def batch_sizes(
        self, *, type: str, since: datetime, limit: int = 1000
    ) -> list[BatchSize]:
        """The batches of job type ``type`` claimed at or after ``since`` (an aware datetime),
        newest first, at most ``limit`` (1..10,000): when each was claimed and its size."""
        check_name("type", type)
        most = checks.bounded_int("limit", limit, 1, checks.MAX_FETCH)
        return await self.driver.batch_sizes(type, check_time("since", since), most)

    @operation
    async def batches_tidy(self, *, older_than: datetime, fence: LeaderTerm | None = None) -> int:
        """Forget which batch each job ran in for batches claimed before ``older_than`` (the
        inspector's and the batch sizes' history, kept as long as the minute buckets). Returns
        how many job rows were dropped."""
        cutoff = check_time("older_than", older_than)
        return await self.driver.batches_tidy(cutoff, fence_of(fence))
