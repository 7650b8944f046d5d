"""Streams on PostgreSQL: the items a job emits, written under its lease, read in order.

Owns turning the stream operations into the named statements of ``sql/streams.sql``: an emit is
one statement that holds the leased row, writes the item at the stream's end and notifies the
job's readers (``d:<job id>``, LISTEN/NOTIFY) when someone reads it. Arguments arrive checked
(``chokaq.storage.streams``); it holds no SQL text.
"""

from __future__ import annotations

from datetime import datetime

from ...models import Lease, StreamItem
from .connection import PostgresCore

__all__ = ["PostgresStreams"]


class PostgresStreams(PostgresCore):
    """The stream operations."""

    async def streams_emit(self, lease: Lease, index: int, item: str, now: datetime | None) -> bool:
        params = {
            "id": lease.job_id,
            "worker": lease.worker_id,
            "token": lease.token,
            "index": index,
            "item": item,
            "now": now,
            "channel": self.channel,
        }
        return any(row[0] for row in await self._rows("streams_emit", params))

    async def streams_read(self, job_id: str, from_index: int, limit: int) -> list[StreamItem]:
        params = {"id": job_id, "from": from_index, "limit": limit}
        return [StreamItem(*row) for row in await self._rows("streams_read", params)]

    async def streams_length(self, job_id: str) -> int:
        [row] = await self._rows("streams_length", {"id": job_id})
        return int(row[0])

    async def streams_tidy(self, limit: int) -> int:
        return await self._count("streams_tidy", {"limit": limit})
