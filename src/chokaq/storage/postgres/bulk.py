"""Bulk actions on PostgreSQL: the preview of an action by filter over hot or archive, cancel of
hot jobs by filter, "requeue as new" and delete of archived jobs by filter, and run-now.

Owns mapping each onto one statement or one short transaction (a cancel by filter reads the
matching ids, then cancels them in the transaction ``jobs_cancel`` uses, so a running job gets
the same durable cancel request). Lifetime counters and metric buckets are never decremented
here. Arguments arrive checked; this module holds no SQL text.
"""

from __future__ import annotations

from datetime import datetime

from ...ids import new_job_id
from ...models import CancelResult, JobFilter, Pillar, Preview, RequeuedJob
from .jobs import PostgresJobs
from .reads import filter_params

__all__ = ["PostgresBulk"]

_NAMES = {Pillar.HOT: "bulk_hot", Pillar.ARCHIVE: "bulk_archive"}


class PostgresBulk(PostgresJobs):
    """Bulk operator commands over ``jobs_hot`` and ``jobs_archive``."""

    async def jobs_preview(
        self, pillar: Pillar, filter: JobFilter, cap: int, sample: int
    ) -> Preview:
        name, params = _NAMES[pillar], filter_params(filter)
        async with self.pool.connection() as conn:
            cur = await conn.execute(self._q[name + "_count"], params)
            row = await cur.fetchone()
            matched = int(row[0]) if row is not None else 0
            cur = await conn.execute(self._q[name + "_ids"], {**params, "cap": min(sample, cap)})
            sample_ids = tuple(r[0] for r in await cur.fetchall())
        return Preview(
            matched=matched, will_affect=min(matched, cap), cap=cap, sample_ids=sample_ids
        )

    async def _match(self, pillar: Pillar, filter: JobFilter, cap: int) -> list[str]:
        params = {**filter_params(filter), "cap": cap}
        return [row[0] for row in await self._rows(_NAMES[pillar] + "_ids", params)]

    async def jobs_cancel_by_filter(
        self, filter: JobFilter, actor: str, cap: int, now: datetime | None
    ) -> CancelResult:
        wanted = await self._match(Pillar.HOT, filter, cap)
        if not wanted:
            return CancelResult(cancelled=(), requested=(), not_found=())
        return await self.jobs_cancel(tuple(wanted), actor, now)

    async def archive_requeue_by_filter(
        self, filter: JobFilter, actor: str, cap: int, now: datetime | None
    ) -> list[RequeuedJob]:
        wanted = await self._match(Pillar.ARCHIVE, filter, cap)
        if not wanted:
            return []
        new_ids = [new_job_id() for _ in wanted]
        params = {
            "ids": wanted,
            "new_ids": new_ids,
            "actor": actor,
            "now": now,
            "channel": self.channel,
        }
        made = {row[0] for row in await self._rows("archive_requeue", params) if row[0]}
        return [
            RequeuedJob(archived_id=old, new_id=new)
            for old, new in zip(wanted, new_ids, strict=True)
            if new in made
        ]

    async def archive_delete_by_filter(self, filter: JobFilter, cap: int) -> list[str]:
        params = filter_params(filter)
        async with self.pool.connection() as conn, conn.transaction():
            cur = await conn.execute(self._q["bulk_archive_ids"], {**params, "cap": cap})
            wanted = [r[0] for r in await cur.fetchall()]
            if not wanted:
                return []
            cur = await conn.execute(self._q["archive_delete"], {"ids": wanted})
            deleted = {r[0] for r in await cur.fetchall()}
        return [i for i in wanted if i in deleted]

    async def jobs_run_now(
        self, ids: tuple[str, ...], actor: str, now: datetime | None
    ) -> list[str]:
        params = {"ids": list(ids), "actor": actor, "now": now, "channel": self.channel}
        moved = {row[0] for row in await self._rows("jobs_run_now", params) if row[0]}
        return [i for i in ids if i in moved]
