"""The storage seam's claims area, checked once and observed once: the worker path of a job,
from the claim (fetch, with expiry and rate limits judged on the way) through start,
heartbeat, progress and release to the finalize that moves it out of hot, and the finish of
the releases a finalize left for later (``jobs_release_missed``).

``Backend`` is assembled from this group and the others (see ``chokaq.storage.backend`` for the
rules every operation follows). A transition is guarded by the lease it names. This module must
not import a database driver or hold SQL.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from logging import WARNING

from ..limits import check_name
from ..logs import Event, log_event
from ..models import (
    Claim,
    ClaimedJob,
    FailMove,
    FailureReason,
    Heartbeat,
    HeartbeatAck,
    JobStatus,
    LeaderTerm,
    Lease,
    Move,
    Started,
)
from . import checks
from .driver import UndecodableRow
from .observed import operation
from .ratelimits import LimitOperations

__all__ = ["ClaimOperations"]

# How many times a claim that found only expired jobs claims again before it returns.
EXPIRED_REFILLS = 8


def _utc(when: datetime | None) -> datetime:
    assert when is not None
    return when.astimezone(UTC)


def expired_of(jobs: list[ClaimedJob], now: datetime | None) -> list[ClaimedJob]:
    """The jobs claimed past their expiry that had never started (a retry of a job that did
    start runs on: expiry is about the first start). A claim that starts jobs judged expiry on
    the database's clock, and left such a job Processing with no attempt counted; a Fetched
    one is judged here, on ``now`` (None: this process's clock)."""
    if all(job.expires_at is None for job in jobs):
        return []
    moment = now or datetime.now(UTC)
    return [
        job
        for job in jobs
        if job.expires_at is not None
        and job.attempt_count == 0
        and (job.status is JobStatus.PROCESSING or job.expires_at <= moment)
    ]


class ClaimOperations(LimitOperations):
    """The storage seam's worker path: claim, start, heartbeat, progress, release, finalize.

    A claim consults the active rate limits (``ratelimits``), hence the base class."""

    @operation
    async def jobs_fetch(
        self,
        *,
        worker_id: str,
        limit: int,
        queues: Sequence[str] | None = None,
        exclude_types: Sequence[str] = (),
        start: bool = False,
        now: datetime | None = None,
    ) -> list[ClaimedJob]:
        """Claim up to ``limit`` (0..10,000) eligible jobs for ``worker_id``.

        Eligible: Pending, due (``scheduled_at`` null or <= now), queue not paused and active
        (a queue without a row counts as active), in ``queues`` when given, type not in
        ``exclude_types``, and within the queue's ``max_workers`` (Fetched + Processing across
        all workers, counted inside the fetch). Ordered by priority DESC, then
        coalesce(scheduled_at, created_at), then created_at. Each claim gets a fresh lease token.
        ``start=True`` claims straight into Processing (counting the attempt, setting started_at
        and heartbeat) for a worker that has a free slot for each; otherwise rows become Fetched.
        Concurrent fetchers never receive the same job. Limits apply as ``jobs_claim`` says.
        """
        claim = await self._claim(worker_id, limit, queues, exclude_types, start, now)
        return claim.jobs

    @operation
    async def jobs_claim(
        self,
        *,
        worker_id: str,
        limit: int,
        queues: Sequence[str] | None = None,
        exclude_types: Sequence[str] = (),
        start: bool = False,
        now: datetime | None = None,
    ) -> Claim:
        """``jobs_fetch``, and when the limits that held jobs back allow the next start.

        Limits (``limit_set``, ``@app.job(rate_limit=, partition_concurrency=)``) are enforced
        here, across every process: a job whose queue rate, type rate or partition cap has no
        room now is not claimed (no attempt is spent) and stays Pending. A type's partitioned
        jobs are claimed partition by partition in turn (from the one after the partition the
        last claim served), so one busy partition cannot starve the others; within a partition
        and among unpartitioned jobs, the order is ``jobs_fetch``'s."""
        return await self._claim(worker_id, limit, queues, exclude_types, start, now)

    async def _claim(
        self,
        worker_id: str,
        limit: int,
        queues: Sequence[str] | None,
        exclude_types: Sequence[str],
        start: bool,
        now: datetime | None,
    ) -> Claim:
        check_name("worker_id", worker_id)
        limit = checks.bounded_int("limit", limit, 0, checks.MAX_FETCH)
        names = checks.names("queues", queues)
        excluded = checks.names("exclude_types", exclude_types) or []
        clock = checks.now(now)
        if limit == 0 or names == []:
            return Claim([])
        buried: list[ClaimedJob] = []
        for _ in range(EXPIRED_REFILLS):
            retry_at = None
            if (await self._active_limits()).apply_to(names):
                rows, retry_at = await self.driver.jobs_fetch_limited(
                    worker_id, limit, names, excluded, bool(start), clock
                )
            else:
                rows = await self.driver.jobs_fetch(
                    worker_id, limit, names, excluded, bool(start), clock
                )
                if not rows:  # a limit or a partitioned job may have come since the last read
                    await self._active_limits(fresh=True)
            jobs = [row for row in rows if not isinstance(row, UndecodableRow)]
            if len(jobs) < len(rows):
                await self._reject_undecodable(
                    [row for row in rows if isinstance(row, UndecodableRow)], clock
                )
            expired = expired_of(jobs, clock)
            if not expired:
                break
            await self._expire(expired, clock)
            buried += expired
            gone = {job.id for job in expired}
            jobs = [job for job in jobs if job.id not in gone]
            if jobs:
                break
            # Every job claimed had expired: claim again, or the worker would wait for a
            # wake-up with jobs still pending behind them.
        return Claim(jobs, retry_at, tuple(buried))

    async def _expire(self, jobs: list[ClaimedJob], now: datetime | None) -> None:
        """Bury claimed jobs that were not started by their expiry as EXPIRED."""
        moves: list[Move] = [
            FailMove(
                lease=job.lease,
                reason=FailureReason.EXPIRED,
                error=f"Expired: not started by {_utc(job.expires_at):%Y-%m-%d %H:%M:%S} UTC",
            )
            for job in jobs
        ]
        log_event(
            Event.JOB_EXPIRED,
            "claimed jobs past their expiry; dead-lettering them as EXPIRED",
            count=len(jobs),
            job_ids=",".join(job.id for job in jobs[:10]),
        )
        await self._bury_claimed(moves, Event.JOB_EXPIRED, "dead-letter expired jobs", now)

    async def _reject_undecodable(self, rows: list[UndecodableRow], now: datetime | None) -> None:
        """Bury claimed rows that cannot be decoded as REJECTED; the healthy jobs of the batch
        are returned either way."""
        moves: list[Move] = [
            FailMove(
                lease=row.lease,
                reason=FailureReason.REJECTED,
                error=f"Rejected: undecodable row ({row.error})",
            )
            for row in rows
        ]
        for row in rows:
            log_event(
                Event.JOB_ROW_UNDECODABLE,
                "claimed a row that cannot be decoded; rejecting it",
                level=WARNING,
                job_id=row.lease.job_id,
                error=row.error,
            )
        await self._bury_claimed(moves, Event.JOB_ROW_UNDECODABLE, "reject undecodable rows", now)

    async def _bury_claimed(
        self, moves: list[Move], event: Event, what: str, now: datetime | None
    ) -> None:
        """Move claimed rows to the DLQ under the leases their claim just minted (fail moves:
        counters and buckets as for any failure). A move that fails, or is not applied, leaves
        its row claimed: rescue puts it back, and the next claim buries it; this never raises
        (the claim's healthy jobs are handed out regardless)."""
        moves = checks.moves(moves, len(moves))  # the error text made storable
        try:
            applied = await self.driver.jobs_finalize(moves, now)
        except Exception as exc:
            stuck, error = moves, str(self.driver.translate(exc))
        else:
            stuck = [move for move, done in zip(moves, applied, strict=True) if not done]
            error = "the move to the DLQ was not applied (is the id there already?)"
        if stuck:
            log_event(
                event,
                f"could not {what}; they stay claimed for rescue",
                level=WARNING,
                job_ids=",".join(move.lease.job_id for move in stuck),
                error=error,
            )

    @operation
    async def jobs_start(self, *, lease: Lease, now: datetime | None = None) -> Started | None:
        """Fetched -> Processing under the lease: attempt_count + 1, started_at = heartbeat_at =
        now. None when the lease is stale or the row is not Fetched."""
        [checked] = checks.leases("lease", [lease], 1)
        started = await self.driver.jobs_start([checked], checks.now(now))
        return started.get(checked.job_id)

    @operation
    async def jobs_start_many(
        self, *, leases: Sequence[Lease], now: datetime | None = None
    ) -> dict[str, Started]:
        """``jobs_start`` for many leases in one round trip; returns the ones that applied."""
        checked = checks.leases("leases", leases, self._max_batch)
        clock = checks.now(now)
        if not checked:
            return {}
        return await self.driver.jobs_start(checked, clock)

    @operation
    async def jobs_heartbeat(
        self, *, beats: Sequence[Heartbeat], now: datetime | None = None
    ) -> list[HeartbeatAck]:
        """Refresh heartbeat_at (and progress when given, clamped to 0..100) of Processing rows
        under their lease, in one round trip. The acks (input order) say whether each job is
        still owned and whether a cancel was requested for it (and by whom)."""
        checked = checks.heartbeats(beats, self._max_batch)
        clock = checks.now(now)
        if not checked:
            return []
        return await self.driver.jobs_heartbeat(checked, clock)

    @operation
    async def jobs_progress(
        self, *, lease: Lease, progress: float, now: datetime | None = None
    ) -> bool:
        """Store the progress of a Processing job under its lease: a finite number of percent,
        clamped to 0..100 and rounded to a whole one. False when the lease is stale."""
        [checked] = checks.leases("lease", [lease], 1)
        value = checks.progress("progress", progress)
        return await self.driver.jobs_progress(checked, value, checks.now(now))

    @operation
    async def jobs_release(
        self, *, leases: Sequence[Lease], now: datetime | None = None
    ) -> list[str]:
        """Fetched -> Pending under the lease (prefetched but never started; attempts unchanged).
        Returns the ids released, in input order."""
        checked = checks.leases("leases", leases, self._max_batch)
        clock = checks.now(now)
        if not checked:
            return []
        return await self.driver.jobs_release(checked, clock)

    @operation
    async def jobs_finalize(
        self, *, moves: Sequence[Move], now: datetime | None = None
    ) -> list[bool]:
        """Apply succeed / fail / retry moves, each guarded by its lease (status Fetched or
        Processing), in one transaction; returns whether each applied (input order). A job is
        moved at most once per call: a repeated id reports False. A move whose id another row
        already holds in the target pillar reports False and the others still apply; any other
        database error raises ``StorageError`` and applies nothing of the batch.

        * ``SucceedMove``: hot -> archive (finished_at = now, duration), succeeded_total + 1,
          bucket (now, queue, SUCCEEDED, -1) count + 1 with its duration.
        * ``FailMove``: hot -> DLQ (reason, error, failed_at = now, cancelled_by = actor),
          failed_total + 1, bucket (now, queue, FAILED, reason) count + 1.
        * ``RetryMove``: back to Pending due at run_at / now + delay, last_error kept, worker
          and lease cleared, attempt refunded when asked, retried_total + 1 when counted.
        """
        checked = checks.moves(moves, self._max_batch)
        clock = checks.now(now)
        if not checked:
            return []
        first: dict[str, int] = {}
        for i, move in enumerate(checked):
            first.setdefault(move.lease.job_id, i)
        if len(first) == len(checked):
            return await self.driver.jobs_finalize(checked, clock)
        order = sorted(first.values())
        applied = await self.driver.jobs_finalize([checked[i] for i in order], clock)
        done = dict(zip(order, applied, strict=True))
        return [done.get(i, False) for i in range(len(checked))]

    @operation
    async def jobs_release_missed(self, *, fence: LeaderTerm | None = None) -> int:
        """Finish the releases a parent's move left for later (a child enqueued while its
        parent was finishing, which the move's snapshot could not see; the move recorded the
        parent in its own transaction): each such child counts the parent as succeeded, and
        goes to Pending when no parent is left. Returns how many parents were settled; 0 where
        a move always sees every child (SQLite's single writer). The worker that made such a
        move calls it at once; the elected worker's rescue pass calls it too (after a crash
        in between). Any process may run it: a release is applied once however many do."""
        return await self.driver.jobs_release_missed(
            None if fence is None else checks.term("fence", fence)
        )
