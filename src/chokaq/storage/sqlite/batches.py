"""The batches area on SQLite, as on PostgreSQL (docs/batches.md): a batch handler's claim in
one write transaction, the record of which batch each job ran in, its reads and its tidy.

The statements are in ``sql/batches.sql``; the claim of the chosen rows is the plain claim's
(``claims.claim_ids``). Arguments arrive checked (``chokaq.storage.batches``); it holds no SQL
text.
"""

from __future__ import annotations

import json
import sqlite3
import time
from datetime import datetime

from ...models import BatchRequest, BatchSize, ClaimedJob, JobBatch, LeaderTerm
from ..driver import UndecodableRow
from .claims import claim_ids
from .connection import Database, SQLiteCore
from .maintenance import fenced_delete
from .rows import from_ts, given_ts, to_ts

__all__ = ["SQLiteBatches"]


def claim_batch(
    db: Database, batch: BatchRequest, given: float | None
) -> tuple[list[ClaimedJob | UndecodableRow], float | None]:
    """Claim one batch as PostgreSQL's ``jobs_claim_batch`` does, in one write transaction:
    the oldest due job picks the queue and the key's value, the batch is claimed once full (up
    to the bulkhead's room) or once its oldest job has been due ``wait_seconds``, and each
    claimed job is recorded under the batch id. With nothing claimed, also when the oldest
    pending job of the type may be claimed anyway (Unix seconds; None: none pending)."""

    def run() -> tuple[list[ClaimedJob | UndecodableRow], float | None]:
        now = time.time() if given is None else given
        conn, q = db.conn, db.q
        path = None if batch.key is None else f'$."{batch.key}"'
        queues = None if batch.queues is None else json.dumps(batch.queues)
        base = {"type": batch.type, "now": now, "path": path, "queues": queues}
        head = conn.execute(q["jobs_claim_batch_head"], base).fetchone()
        if head is None:
            return [], None
        picked, oldest = _batch_members(db, batch, base, head)
        if not picked:
            return [], None if oldest is None else oldest + batch.wait_seconds
        claimed = claim_ids(db, batch.worker_id, picked, True, now)
        conn.executemany(
            q["jobs_claim_batch_record"],
            [
                {
                    "batch_id": batch.batch_id,
                    "job_id": job.id,
                    "type": job.type,
                    "queue": job.queue,
                    "attempt": job.attempt_count,
                    "worker_id": batch.worker_id,
                    "now": now,
                }
                for job in claimed
                if isinstance(job, ClaimedJob)
            ],
        )
        return claimed, None

    return db.write(run)


def _batch_members(
    db: Database, batch: BatchRequest, base: dict[str, object], head: sqlite3.Row
) -> tuple[list[str], float | None]:
    """The ids of the batch ``head`` starts when it is ready to be claimed (else none), and
    when its oldest job became due (None: no room)."""
    conn, q = db.conn, db.q
    limit = batch.limit
    room = conn.execute(q["jobs_claim_batch_room"], {"queue": head["queue"]}).fetchone()
    if room is not None:
        limit = min(limit, room[0])
    if limit <= 0:
        return [], None
    params = {**base, "queue": head["queue"], "value": head["value"], "limit": limit}
    rows = conn.execute(q["jobs_claim_batch_members"], params).fetchall()
    oldest = min((row["scheduled_at"] for row in rows), default=None)
    now = base["now"]
    assert isinstance(now, float)
    if len(rows) < limit and (oldest is None or oldest > now - batch.wait_seconds):
        return [], oldest
    return [row["id"] for row in rows], oldest


def job_batches(db: Database, job_id: str, limit: int) -> list[JobBatch]:
    rows = db.conn.execute(db.q["batches_of_job"], {"id": job_id, "limit": limit}).fetchall()
    return [
        JobBatch(
            batch_id=row[0],
            type=row[1],
            queue=row[2],
            attempt=row[3],
            worker_id=row[4],
            claimed_at=from_ts(row[5]),  # type: ignore[arg-type]
            job_ids=tuple(json.loads(row[6])),
        )
        for row in rows
    ]


def batch_sizes(db: Database, type: str, since: float, limit: int) -> list[BatchSize]:
    params = {"type": type, "since": since, "limit": limit}
    rows = db.conn.execute(db.q["batches_of_type"], params).fetchall()
    return [BatchSize(row[0], from_ts(row[1]), row[2]) for row in rows]  # type: ignore[arg-type]


def batches_tidy(db: Database, before: float, fence: LeaderTerm | None) -> int:
    return fenced_delete(db, "batches_tidy", before, fence)


class SQLiteBatches(SQLiteCore):
    """The batch operations."""

    async def jobs_claim_batch(
        self, batch: BatchRequest, now: datetime | None
    ) -> tuple[list[ClaimedJob | UndecodableRow], datetime | None]:
        jobs, due = await self._db.call(claim_batch, batch, given_ts(now))
        return jobs, from_ts(due)

    async def job_batches(self, id: str, limit: int) -> list[JobBatch]:
        return await self._db.call(job_batches, id, limit)

    async def batch_sizes(self, type: str, since: datetime, limit: int) -> list[BatchSize]:
        return await self._db.call(batch_sizes, type, to_ts(since), limit)

    async def batches_tidy(self, older_than: datetime, fence: LeaderTerm | None) -> int:
        return await self._db.call(batches_tidy, older_than.timestamp(), fence)
