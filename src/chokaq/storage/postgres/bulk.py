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
from ..paging import COUNT_EXACT_UP_TO
from .jobs import PostgresJobs
from .reads import count_matches, filter_params

__all__ = ["PostgresBulk"]

_NAMES = {Pillar.HOT: "bulk_hot", Pillar.ARCHIVE: "bulk_archive"}


class PostgresBulk(PostgresJobs):
    """Bulk operator commands over ``jobs_hot`` and ``jobs_archive``."""

    async def jobs_preview(
        self, pillar: Pillar, filter: JobFilter, cap: int, sample: int
    ) -> Preview:
        name, params = _NAMES[pillar], filter_params(filter)
        async with self.pool.connection() as conn:
            # What the action takes is counted exactly, up to the cap; the matches past it
            # are counted as a listing counts them (jobs_count): exactly up to
            # COUNT_EXACT_UP_TO, else the planner's estimate. Counting every match of a
            # broad search took 363 ms of the archive's preview.
            upto = f"{pillar.value}_count_upto"
            cur = await conn.execute(self._q[upto], {**params, "bound": cap + 1})
            row = await cur.fetchone()
            taken = int(row[0]) if row is not None else 0
            cur = await conn.execute(self._q[name + "_ids"], {**params, "cap": min(sample, cap)})
            sample_ids = tuple(r[0] for r in await cur.fetchall())
            matched, estimated = taken, False
            if taken > cap:
                counted = await count_matches(conn, self._q, pillar, params, COUNT_EXACT_UP_TO)
                matched, estimated = max(counted[0], taken), counted[1]
        return Preview(
            matched=matched,
            will_affect=min(taken, cap),
            cap=cap,
            sample_ids=sample_ids,
            matched_estimated=estimated,
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
