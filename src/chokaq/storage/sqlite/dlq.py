"""The dead-letter queue on SQLite: edit, resurrect (by id or by filter), preview and purge.

Each function runs on the connection's thread in one short write transaction (or a read).
Lifetime counters and metric buckets are never touched here: a resurrection or a purge does not
erase an outcome that happened. Arguments arrive checked; it owns these statements' use only.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime

from ...models import JobFilter, Preview
from ..checks import Edits
from .connection import Database, SQLiteCore
from .jobs import Moved, dependency_fail, edits_params, ensure_queues
from .notify import broadcast_jobs
from .reads import filter_params
from .rows import ts_now

__all__ = [
    "SQLiteDlq",
    "dlq_edit",
    "dlq_filter_ids",
    "dlq_purge",
    "dlq_purge_by_filter",
    "resurrect",
    "resurrect_by_filter",
]


def dlq_edit(db: Database, params: dict[str, object]) -> bool:
    return db.write(lambda: db.conn.execute(db.q["dlq_edit"], params).rowcount > 0)


Resurrected = tuple[list[str], list[str]]


def resurrect(db: Database, ids: Sequence[str], params: dict[str, object]) -> Resurrected:
    """DLQ -> hot for each id (``params`` carries the repairs and the actor); the ids moved and
    their queues."""
    return db.write(_resurrect, db, ids, params)


def _resurrect(db: Database, ids: Sequence[str], params: dict[str, object]) -> Resurrected:
    conn, q = db.conn, db.q
    moved, queues = [], []
    for job_id in ids:
        row_params = {**params, "id": job_id}
        if conn.execute(q["dlq_resurrect"], row_params).rowcount == 0:
            continue
        row = conn.execute(q["dlq_resurrect_delete"], row_params).fetchone()
        if row is not None:
            moved.append(job_id)
            queues.append(str(row[0]))
    if queues:
        ensure_queues(db, queues, float(params["now"]))  # type: ignore[arg-type]
    return moved, queues


def dlq_filter_ids(db: Database, filter: JobFilter, cap: int) -> tuple[int, list[str]]:
    """How many DLQ rows match, and the ids of the newest ``cap`` of them."""
    params = filter_params(filter)
    matched = db.conn.execute(db.q["dlq_count"], params).fetchone()[0]
    rows = db.conn.execute(db.q["dlq_match_ids"], {**params, "cap": cap}).fetchall()
    return matched, [row[0] for row in rows]


def resurrect_by_filter(
    db: Database, filter: JobFilter, cap: int, params: dict[str, object]
) -> Resurrected:
    def run() -> Resurrected:
        _, ids = dlq_filter_ids(db, filter, cap)
        return _resurrect(db, ids, params)

    return db.write(run)


Purged = tuple[list[str], Moved]


def dlq_purge(db: Database, ids: Sequence[str], now: float) -> Purged:
    return db.write(_purge, db, list(ids), now)


def dlq_purge_by_filter(db: Database, filter: JobFilter, cap: int, now: float) -> Purged:
    def run() -> Purged:
        _, ids = dlq_filter_ids(db, filter, cap)
        return _purge(db, ids, now)

    return db.write(run)


def _purge(db: Database, ids: list[str], now: float) -> Purged:
    """Delete DLQ rows; each child still waiting on a purged row goes to the DLQ as
    DEPENDENCY_FAILED naming it, in the same transaction."""
    rows = db.conn.execute(db.q["dlq_purge"], {"ids": json.dumps(ids)}).fetchall()
    deleted = [row[0] for row in rows]
    moved = Moved()
    if deleted:
        db.conn.execute(db.q["attempts_forget"], {"ids": json.dumps(deleted)})
        orphans = db.conn.execute(db.q["jobs_orphans"], {"ids": json.dumps(deleted)}).fetchall()
        if orphans:
            _, moved = dependency_fail(
                db,
                [(row[0], row[1]) for row in orphans],
                lambda parent: f"Dependency failed: parent {parent} was purged from the DLQ",
                None,
                now,
            )
    purged = set(deleted)
    return [job_id for job_id in ids if job_id in purged], moved


class SQLiteDlq(SQLiteCore):
    """The dead-letter queue: edit, resurrect, purge."""

    async def dlq_edit(self, id: str, actor: str, edits: Edits) -> bool:
        return await self._db.call(dlq_edit, edits_params(id, actor, edits, None))

    async def dlq_resurrect(
        self, ids: tuple[str, ...], actor: str, edits: Edits, now: datetime | None
    ) -> list[str]:
        params = edits_params("", actor, edits, now)
        moved, queue_names = await self._db.call(resurrect, ids, params)
        broadcast_jobs(self._db.key, queue_names)
        return moved

    async def dlq_preview(self, filter: JobFilter, cap: int, sample: int) -> Preview:
        def run(db: Database) -> tuple[int, list[str]]:
            return db.read(dlq_filter_ids, db, filter, min(cap, sample))

        matched, ids = await self._db.call(run)
        return Preview(
            matched=matched, will_affect=min(matched, cap), cap=cap, sample_ids=tuple(ids)
        )

    async def dlq_resurrect_by_filter(
        self, filter: JobFilter, actor: str, cap: int, now: datetime | None
    ) -> list[str]:
        params = edits_params("", actor, Edits(), now)
        moved, queue_names = await self._db.call(resurrect_by_filter, filter, cap, params)
        broadcast_jobs(self._db.key, queue_names)
        return moved

    async def dlq_purge(self, ids: tuple[str, ...]) -> list[str]:
        purged, moved = await self._db.call(dlq_purge, ids, ts_now(None))
        self._told(moved)
        return purged

    async def dlq_purge_by_filter(self, filter: JobFilter, cap: int) -> list[str]:
        purged, moved = await self._db.call(dlq_purge_by_filter, filter, cap, ts_now(None))
        self._told(moved)
        return purged
