"""The maintenance area on PostgreSQL: rescue of abandoned, zombie and expired jobs, age purges
of the archive and the DLQ, metric-bucket pruning and roll-ups, the tidying of limit and
uniqueness rows, and vacuuming the hot table when its dead row versions pile up.

Owns the batching of each purge (many short transactions, so a purge never holds long locks
on a busy table). Lifetime counters are never touched here. Arguments arrive checked; this
module holds no SQL text.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, LiteralString

import psycopg

from ...models import LeaderTerm, RescueResult
from ..checks import ATTEMPTS_KEPT
from ..driver import EXPIRE_BATCH
from .connection import Params, PostgresCore

__all__ = ["HOT_DEAD_ROWS_LIMIT", "PostgresMaintenance"]

# Dead hot-row versions past which the elected worker vacuums the hot table itself.
HOT_DEAD_ROWS_LIMIT = 20_000


class PostgresMaintenance(PostgresCore):
    """What the elected worker runs to keep the tables small."""

    async def jobs_hot_tidy(self, fence: LeaderTerm | None) -> bool:
        row = await self._one("jobs_hot_tidy_dead_rows", {"schema": self.schema})
        dead, live = (row[0], row[1]) if row is not None else (0, 0)
        # Autovacuum would have acted long before this; it is off or far behind.
        if dead < HOT_DEAD_ROWS_LIMIT and dead <= live:
            return False
        async with self.pool.connection() as conn:
            # VACUUM runs outside a transaction block only, so the fence is checked just before
            # (without holding the term): a vacuum run by an ex-leader in that gap changes no
            # row, it only reclaims space.
            if fence is not None:
                async with conn.transaction():
                    await self._fence(conn, fence)
            # Autocommit, and never prepared.
            await conn.execute(self._q["jobs_hot_tidy"], prepare=False)
        return True

    async def archive_purge(
        self, older_than: datetime, batch_size: int, limit: int | None, fence: LeaderTerm | None
    ) -> int:
        return await self._purge("archive_purge", older_than, batch_size, limit, fence)

    async def dlq_purge_older(
        self, older_than: datetime, batch_size: int, limit: int | None, fence: LeaderTerm | None
    ) -> int:
        return await self._purge("dlq_purge_older", older_than, batch_size, limit, fence)

    async def _purge(
        self,
        name: str,
        older_than: datetime,
        batch: int,
        limit: int | None,
        fence: LeaderTerm | None,
    ) -> int:
        """Each batch its own transaction, each fenced: a purge that outlives its term stops
        at the next batch (raising ``LeadershipLostError``; the batches before stand)."""
        total = 0
        while limit is None or total < limit:
            size = batch if limit is None else min(batch, limit - total)
            params = {"older_than": older_than, "batch": size}
            async with self._fenced(fence) as conn:
                rows: list[tuple[Any, ...]] = await self._run(conn, name, params)
            deleted = int(rows[0][0]) if rows else 0
            total += deleted
            if deleted < size:
                break
        return total

    async def metrics_prune(
        self, older_than: datetime, width_seconds: int, fence: LeaderTerm | None
    ) -> int:
        params = {"older_than": older_than, "width": width_seconds}
        return await self._fenced_count("metrics_prune", params, fence)

    async def limits_tidy(self, older_than: datetime, fence: LeaderTerm | None) -> int:
        params = {"before": older_than.timestamp()}
        return await self._fenced_count("limit_state_tidy", params, fence)

    async def unique_keys_tidy(self, older_than: datetime, fence: LeaderTerm | None) -> int:
        return await self._fenced_count("unique_keys_tidy", {"before": older_than}, fence)

    async def supersessions_tidy(self, older_than: datetime, fence: LeaderTerm | None) -> int:
        return await self._fenced_count("supersessions_tidy", {"before": older_than}, fence)

    async def metrics_rollup(self, older_than: datetime, fence: LeaderTerm | None) -> int:
        async with self._fenced(fence) as conn:
            rows: list[tuple[Any, ...]] = await self._run(
                conn, "metrics_rollup", {"older_than": older_than}
            )
        return int(rows[0][0]) if rows else 0

    async def _fenced_count(self, name: str, params: Params, fence: LeaderTerm | None) -> int:
        async with self._fenced(fence) as conn:
            cur = await conn.execute(self._q[name], params)
            return max(cur.rowcount, 0)

    # -- rescue -----------------------------------------------------------------------------

    async def jobs_rescue(
        self,
        fetched_timeout_seconds: float,
        processing_timeout_seconds: float,
        now: datetime | None,
        reachable_since: datetime | None,
        fence: LeaderTerm | None,
    ) -> RescueResult:
        params = {
            "timeout": float(processing_timeout_seconds),
            "now": now,
            "since": reachable_since,
            "ids": None,
            "channel": self.channel,
            "keep": ATTEMPTS_KEPT,
        }
        zombies: tuple[str, ...] | None = None
        async with self.pool.connection() as conn:
            async with conn.transaction():
                await self._fence(conn, fence)
                cur = await conn.execute(
                    self._q["jobs_rescue_fetched"],
                    {"timeout": float(fetched_timeout_seconds), "now": now},
                )
                requeued = tuple(row[0] for row in await cur.fetchall())
                try:
                    async with conn.transaction():  # a savepoint: the requeues stand alone
                        cur = await conn.execute(self._q["jobs_rescue_zombies"], params)
                        zombies = tuple(row[0] for row in await cur.fetchall() if row[0])
                except psycopg.IntegrityError:
                    zombies = None
            if zombies is None:
                # One zombie could not be buried (say its id is already in the DLQ): bury each
                # alone, so that one cannot block the others.
                zombies = await self._bury_each(
                    conn, "jobs_rescue_zombies", "jobs_rescue_zombie_candidates", params, fence
                )
            expired = await self._bury(
                conn, "jobs_rescue_expired", {**params, "limit": EXPIRE_BATCH}, fence
            )
        return RescueResult(requeued=requeued, zombies=zombies, expired=expired)

    async def _bury(
        self,
        conn: psycopg.AsyncConnection[Any],
        name: LiteralString,
        params: Params,
        fence: LeaderTerm | None,
    ) -> tuple[str, ...]:
        """Run the move ``name`` (hot -> DLQ) under ``fence``; when one row cannot land (its id
        is in the DLQ already), each of its ``_candidates`` alone, so that one cannot block
        the others. The ids moved."""
        try:
            async with conn.transaction():
                await self._fence(conn, fence)
                cur = await conn.execute(self._q[name], params)
                return tuple(row[0] for row in await cur.fetchall() if row[0])
        except psycopg.IntegrityError:
            pass
        return await self._bury_each(conn, name, name + "_candidates", params, fence)

    async def _bury_each(
        self,
        conn: psycopg.AsyncConnection[Any],
        name: LiteralString,
        candidates: LiteralString,
        params: Params,
        fence: LeaderTerm | None,
    ) -> tuple[str, ...]:
        """Run the move ``name`` on each row of ``candidates`` alone, under ``fence``, skipping
        the rows that cannot land. The ids moved."""
        cur = await conn.execute(self._q[candidates], params)
        found: list[str] = []
        for (job_id,) in await cur.fetchall():
            try:
                async with conn.transaction():
                    await self._fence(conn, fence)
                    cur = await conn.execute(self._q[name], {**params, "ids": [job_id]})
                    found.extend(row[0] for row in await cur.fetchall() if row[0])
            except psycopg.IntegrityError:
                continue
        return tuple(found)
