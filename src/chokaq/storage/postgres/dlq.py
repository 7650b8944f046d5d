"""The dead-letter queue on PostgreSQL: edit, resurrect (by id or by filter), preview and purge.

Owns mapping each of these operator commands onto one statement or one short transaction.
Lifetime counters and metric buckets are never touched here: a resurrection or a purge does not
erase an outcome that happened. Arguments arrive checked; this module holds no SQL text.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ...models import JobFilter, Preview
from ..checks import Edits
from .connection import PostgresCore
from .jobs import edit_params
from .reads import filter_params

__all__ = ["PostgresDlq"]


class PostgresDlq(PostgresCore):
    """Operator commands over ``jobs_dlq``."""

    async def dlq_edit(self, id: str, actor: str, edits: Edits) -> bool:
        params = {**edit_params(edits), "id": id, "actor": actor}
        return await self._count("dlq_edit", params) > 0

    async def dlq_resurrect(
        self, ids: tuple[str, ...], actor: str, edits: Edits, now: datetime | None
    ) -> list[str]:
        return await self._resurrect(list(ids), actor, edits, now)

    async def _resurrect(
        self, wanted: list[str], actor: str, edits: Edits, now: datetime | None
    ) -> list[str]:
        params = {**edit_params(edits), "actor": actor, "now": now, "channel": self.channel}
        rows = await self._rows_each("dlq_resurrect", params, wanted)
        moved = {row[0] for row in rows if row[0] is not None}
        return [i for i in wanted if i in moved]

    async def dlq_preview(self, filter: JobFilter, cap: int, sample: int) -> Preview:
        params = filter_params(filter)
        async with self.pool.connection() as conn:
            cur = await conn.execute(self._q["dlq_count"], params)
            row = await cur.fetchone()
            matched = int(row[0]) if row is not None else 0
            cur = await conn.execute(self._q["dlq_match_ids"], {**params, "cap": min(sample, cap)})
            sample_ids = tuple(r[0] for r in await cur.fetchall())
        return Preview(
            matched=matched, will_affect=min(matched, cap), cap=cap, sample_ids=sample_ids
        )

    async def dlq_resurrect_by_filter(
        self, filter: JobFilter, actor: str, cap: int, now: datetime | None
    ) -> list[str]:
        params = filter_params(filter)
        wanted = [r[0] for r in await self._rows("dlq_match_ids", {**params, "cap": cap})]
        if not wanted:
            return []
        return await self._resurrect(wanted, actor, Edits(), now)

    async def dlq_purge(self, ids: tuple[str, ...]) -> list[str]:
        wanted = list(ids)
        async with self.pool.connection() as conn, conn.transaction():
            deleted = await self._purge_ids(conn, wanted)
        return [i for i in wanted if i in deleted]

    async def dlq_purge_by_filter(self, filter: JobFilter, cap: int) -> list[str]:
        params = filter_params(filter)
        async with self.pool.connection() as conn, conn.transaction():
            cur = await conn.execute(self._q["dlq_match_ids"], {**params, "cap": cap})
            wanted = [r[0] for r in await cur.fetchall()]
            if not wanted:
                return []
            deleted = await self._purge_ids(conn, wanted)
        return [i for i in wanted if i in deleted]

    async def _purge_ids(self, conn: Any, ids: list[str]) -> set[str]:
        """Delete the DLQ rows, then (a statement of its own, for its fresh snapshot) fail the
        children still waiting on them as DEPENDENCY_FAILED, in the caller's transaction."""
        cur = await conn.execute(self._q["dlq_purge"], {"ids": ids})
        deleted = {r[0] for r in await cur.fetchall()}
        if deleted:
            await conn.execute(
                self._q["jobs_orphans_fail"], {"ids": list(deleted), "channel": self.channel}
            )
        return deleted
