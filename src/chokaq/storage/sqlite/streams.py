"""Streams on SQLite: the items a job emits, written under its lease, read in order.

An emit is one short write transaction on the connection's thread (the lease checked, the item
written at the stream's end); after the commit, a job someone reads is announced to its readers
(``notify.broadcast_done``: the in-process listeners and the ``-done`` signal file). The
statements are in ``sql/streams.sql``. Arguments arrive checked (``chokaq.storage.streams``);
it holds no SQL text.
"""

from __future__ import annotations

from datetime import UTC, datetime

from ...models import Lease, StreamItem
from .claims import lease_params
from .connection import Database, SQLiteCore
from .notify import broadcast_done
from .rows import ts_now

__all__ = ["SQLiteStreams"]


def _emit(db: Database, lease: Lease, index: int, item: str, now: float) -> tuple[bool, bool]:
    """Whether the item was written, and whether someone reads the job's stream."""
    owner = db.conn.execute(db.q["streams_owner"], lease_params(lease)).fetchone()
    if owner is None:
        return False, False
    params = {"id": lease.job_id, "index": index, "item": item, "now": now}
    written = db.conn.execute(db.q["streams_emit"], params).rowcount > 0
    return written, bool(owner[0])


class SQLiteStreams(SQLiteCore):
    """The stream operations."""

    async def streams_emit(self, lease: Lease, index: int, item: str, now: datetime | None) -> bool:
        clock = ts_now(now)
        written, read = await self._db.call(
            lambda db: db.write(_emit, db, lease, index, item, clock)
        )
        if written and read:
            broadcast_done(self._db.key, [lease.job_id])
        return bool(written)

    async def streams_read(self, job_id: str, from_index: int, limit: int) -> list[StreamItem]:
        params = {"id": job_id, "from": from_index, "limit": limit}

        def read(db: Database) -> list[StreamItem]:
            rows = db.conn.execute(db.q["streams_read"], params).fetchall()
            return [
                StreamItem(str(r[0]), int(r[1]), str(r[2]), datetime.fromtimestamp(r[3], UTC))
                for r in rows
            ]

        return await self._db.call(read)

    async def streams_length(self, job_id: str) -> int:
        def read(db: Database) -> int:
            return int(db.conn.execute(db.q["streams_length"], {"id": job_id}).fetchone()[0])

        return await self._db.call(read)

    async def streams_tidy(self, limit: int) -> int:
        def tidy(db: Database) -> int:
            return int(db.conn.execute(db.q["streams_tidy"], {"limit": limit}).rowcount)

        return await self._db.call(lambda db: db.write(tidy, db))
