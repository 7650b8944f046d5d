"""The maintenance area on SQLite: rescue of abandoned, zombie and expired jobs, age purges of
the archive and the DLQ, metric-bucket pruning and roll-ups, the tidying of limit and
uniqueness rows; ``SQLiteMaintenance`` is the driver's mixin for the area.

Each function runs on the connection's thread. The age purges loop over small write
transactions, so a long purge never holds the write lock for long; lifetime counters are never
touched here. Arguments arrive checked; it owns these statements' use only.
"""

from __future__ import annotations

import json
from datetime import datetime

from ...models import FailureReason, JobStatus, LeaderTerm, RescueResult
from ..checks import ATTEMPTS_KEPT
from ..driver import EXPIRE_BATCH
from . import ratelimits
from .connection import Database, SQLiteCore
from .jobs import Counters, Moved, move_by_status
from .leadership import check_fence
from .rows import from_ts, ts_now

__all__ = [
    "SQLiteMaintenance",
    "metrics_prune",
    "metrics_rollup",
    "purge_older",
    "rescue",
]


def purge_older(
    db: Database,
    query: str,
    cutoff: float,
    batch_size: int,
    limit: int | None,
    fence: LeaderTerm | None,
) -> int:
    """Delete in batches of ``batch_size``, each its own (fenced) transaction, oldest first."""

    def batch(size: int) -> int:
        check_fence(db, fence)
        rows = db.conn.execute(db.q[query], {"cutoff": cutoff, "limit": size}).fetchall()
        if rows:  # a purged job takes its edges (as a child) and its attempts with it
            ids = json.dumps([row[0] for row in rows])
            db.conn.execute(db.q["edges_unlink"], {"ids": ids})
            db.conn.execute(db.q["attempts_forget"], {"ids": ids})
        return len(rows)

    total = 0
    while limit is None or total < limit:
        size = batch_size if limit is None else min(batch_size, limit - total)
        deleted = db.write(batch, size)
        total += deleted
        if deleted < size:
            break
    return total


def metrics_prune(db: Database, cutoff: float, width: int, fence: LeaderTerm | None) -> int:
    def run() -> int:
        check_fence(db, fence)
        return db.conn.execute(db.q["metrics_prune"], {"cutoff": cutoff, "width": width}).rowcount

    return db.write(run)


def unique_keys_tidy(db: Database, before: float, fence: LeaderTerm | None) -> int:
    return fenced_delete(db, "unique_keys_tidy", before, fence)


def supersessions_tidy(db: Database, before: float, fence: LeaderTerm | None) -> int:
    return fenced_delete(db, "supersessions_tidy", before, fence)


def fenced_delete(db: Database, name: str, before: float, fence: LeaderTerm | None) -> int:
    """Run the delete ``name`` of the rows before ``before`` under the leader's fence."""

    def run() -> int:
        check_fence(db, fence)
        return db.conn.execute(db.q[name], {"before": before}).rowcount

    return db.write(run)


def metrics_rollup(db: Database, cutoff: float, now: float, fence: LeaderTerm | None) -> int:
    def run() -> int:
        check_fence(db, fence)
        params = {"cutoff": cutoff, "now": now}
        db.conn.execute(db.q["metrics_rollup"], params)
        return db.conn.execute(db.q["metrics_rollup_delete"], params).rowcount

    return db.write(run)


# -- rescue -----------------------------------------------------------------------------------


def rescue(
    db: Database,
    fetched_timeout: float,
    processing_timeout: float,
    now: float,
    reachable_since: float | None,
    fence: LeaderTerm | None,
) -> tuple[list[str], list[str], list[str], Moved]:
    def run() -> tuple[list[str], list[str], list[str], Moved]:
        conn, q = db.conn, db.q
        moved = Moved()
        check_fence(db, fence)
        requeued = [
            row[0]
            for row in conn.execute(
                q["jobs_rescue_fetched"], {"now": now, "cutoff": now - fetched_timeout}
            ).fetchall()
        ]
        counters = Counters(now)
        candidates = conn.execute(
            q["jobs_rescue_zombie_candidates"],
            {"now": now, "timeout": processing_timeout, "since": reachable_since},
        ).fetchall()

        def bury(job_id: str, status: JobStatus, reason: FailureReason, error: str) -> bool:
            params = {
                "id": job_id,
                "status": int(status),
                "reason": int(reason),
                "error": error,
                "actor": None,
                "now": now,
            }
            queue = move_by_status(db, params, moved)
            if queue is not None:
                counters.outcome(queue, reason)
                if status is JobStatus.PROCESSING:  # the attempt its dead worker ran failed
                    conn.execute(q["attempts_record_zombie"], {"id": job_id})
                    conn.execute(q["attempts_trim"], {"id": job_id, "keep": ATTEMPTS_KEPT})
            return queue is not None

        zombies = [
            job_id
            for job_id, timeout in candidates
            if bury(
                job_id,
                JobStatus.PROCESSING,
                FailureReason.ZOMBIE,
                f"Zombie: heartbeat expired (no heartbeat for more than {timeout:g} s)",
            )
        ]
        expiring = conn.execute(
            q["jobs_rescue_expired_candidates"], {"now": now, "limit": EXPIRE_BATCH}
        ).fetchall()
        expired = [
            job_id
            for job_id, expires_at in expiring
            if bury(
                job_id,
                JobStatus.PENDING,
                FailureReason.EXPIRED,
                f"Expired: not started by {from_ts(expires_at):%Y-%m-%d %H:%M:%S} UTC",
            )
        ]
        moved.release(db, now)
        counters.write(db)
        return requeued, zombies, expired, moved

    return db.write(run)


class SQLiteMaintenance(SQLiteCore):
    """What the elected worker runs: rescue, purges, roll-ups and tidying."""

    async def jobs_rescue(
        self,
        fetched_timeout_seconds: float,
        processing_timeout_seconds: float,
        now: datetime | None,
        reachable_since: datetime | None,
        fence: LeaderTerm | None,
    ) -> RescueResult:
        since = None if reachable_since is None else reachable_since.timestamp()
        requeued, zombies, expired, moved = await self._db.call(
            rescue,
            fetched_timeout_seconds,
            processing_timeout_seconds,
            ts_now(now),
            since,
            fence,
        )
        self._told(moved)
        return RescueResult(
            requeued=tuple(requeued), zombies=tuple(zombies), expired=tuple(expired)
        )

    async def archive_purge(
        self, older_than: datetime, batch_size: int, limit: int | None, fence: LeaderTerm | None
    ) -> int:
        cutoff = older_than.timestamp()
        return await self._db.call(purge_older, "archive_purge", cutoff, batch_size, limit, fence)

    async def dlq_purge_older(
        self, older_than: datetime, batch_size: int, limit: int | None, fence: LeaderTerm | None
    ) -> int:
        cutoff = older_than.timestamp()
        return await self._db.call(purge_older, "dlq_purge_older", cutoff, batch_size, limit, fence)

    async def metrics_prune(
        self, older_than: datetime, width_seconds: int, fence: LeaderTerm | None
    ) -> int:
        cutoff = older_than.timestamp()
        return await self._db.call(metrics_prune, cutoff, width_seconds, fence)

    async def metrics_rollup(self, older_than: datetime, fence: LeaderTerm | None) -> int:
        cutoff = older_than.timestamp()
        return await self._db.call(metrics_rollup, cutoff, ts_now(None), fence)

    async def limits_tidy(self, older_than: datetime, fence: LeaderTerm | None) -> int:
        return await self._db.call(ratelimits.tidy, older_than.timestamp(), fence)

    async def unique_keys_tidy(self, older_than: datetime, fence: LeaderTerm | None) -> int:
        return await self._db.call(unique_keys_tidy, older_than.timestamp(), fence)

    async def supersessions_tidy(self, older_than: datetime, fence: LeaderTerm | None) -> int:
        return await self._db.call(supersessions_tidy, older_than.timestamp(), fence)
