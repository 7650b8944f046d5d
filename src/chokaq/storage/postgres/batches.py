"""The batches area on PostgreSQL: a batch handler's claim of many jobs of one type in one
statement (docs/batches.md), the record of which batch each job ran in, its reads and its tidy.

Owns turning these operations into the named statements of ``sql/batches.sql`` and the rows
back into models. Arguments arrive checked (``chokaq.storage.batches``); this module checks
none and holds no SQL text.
"""

from __future__ import annotations

from datetime import datetime

from ...models import BatchRequest, BatchSize, ClaimedJob, JobBatch, LeaderTerm
from ..driver import UndecodableRow
from .connection import PostgresCore
from .rows import claimed_rows

__all__ = ["PostgresBatches"]


class PostgresBatches(PostgresCore):
    """The batch operations."""

    async def jobs_claim_batch(
        self, batch: BatchRequest, now: datetime | None
    ) -> tuple[list[ClaimedJob | UndecodableRow], datetime | None]:
        params = {
            "batch_id": batch.batch_id,
            "worker_id": batch.worker_id,
            "type": batch.type,
            "limit": batch.limit,
            "wait": batch.wait_seconds,
            "key": batch.key,
            "queues": batch.queues,
            "start": True,
            "now": now,
        }
        async with self._connection("claim") as conn:
            jobs = await claimed_rows(await conn.execute(self._q["jobs_claim_batch"], params))
            if jobs:
                return jobs, None
            cur = await conn.execute(self._q["jobs_claim_batch_due"], params)
            row = await cur.fetchone()
        return [], None if row is None else row[0]

    async def job_batches(self, id: str, limit: int) -> list[JobBatch]:
        rows = await self._rows("batches_of_job", {"id": id, "limit": limit})
        return [
            JobBatch(
                batch_id=row[0],
                type=row[1],
                queue=row[2],
                attempt=row[3],
                worker_id=row[4],
                claimed_at=row[5],
                job_ids=tuple(row[6] or ()),
            )
            for row in rows
        ]

    async def batch_sizes(self, type: str, since: datetime, limit: int) -> list[BatchSize]:
        rows = await self._rows("batches_of_type", {"type": type, "since": since, "limit": limit})
        return [BatchSize(*row) for row in rows]

    async def batches_tidy(self, older_than: datetime, fence: LeaderTerm | None) -> int:
        async with self._fenced(fence) as conn:
            cur = await conn.execute(self._q["batches_tidy"], {"before": older_than})
            return max(cur.rowcount, 0)
