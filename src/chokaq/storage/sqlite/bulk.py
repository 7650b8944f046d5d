"""Bulk actions on SQLite: the preview of an action by filter over hot or archive, cancel of hot
jobs by filter, "requeue as new" and delete of archived jobs by filter, and run-now.

Each runs in one short write transaction (or a read) on the connection's thread; a cancel by
filter reads the matching ids, then cancels them as ``jobs_cancel`` does, so a running job gets
the same durable cancel request. Lifetime counters and metric buckets are never decremented
here. Arguments arrive checked; no SQL text here.
"""

from __future__ import annotations

import json
from datetime import datetime

from ...ids import new_job_id
from ...models import CancelResult, JobFilter, Pillar, Preview, RequeuedJob
from .connection import Database
from .jobs import SQLiteJobs, ensure_queues
from .notify import broadcast_jobs
from .reads import filter_params
from .rows import ts_now

__all__ = ["SQLiteBulk"]

_NAMES = {Pillar.HOT: "bulk_hot", Pillar.ARCHIVE: "bulk_archive"}


def _match(db: Database, name: str, filter: JobFilter, cap: int) -> list[str]:
    rows = db.conn.execute(db.q[name + "_ids"], {**filter_params(filter), "cap": cap})
    return [row[0] for row in rows.fetchall()]


def _preview(db: Database, pillar: Pillar, filter: JobFilter, cap: int, sample: int) -> Preview:
    def run() -> Preview:
        name = _NAMES[pillar]
        matched = db.conn.execute(db.q[name + "_count"], filter_params(filter)).fetchone()[0]
        ids = _match(db, name, filter, min(sample, cap))
        return Preview(
            matched=matched, will_affect=min(matched, cap), cap=cap, sample_ids=tuple(ids)
        )

    return db.read(run)


def _hot_ids(db: Database, filter: JobFilter, cap: int) -> list[str]:
    return db.read(_match, db, "bulk_hot", filter, cap)


def _requeue(
    db: Database, filter: JobFilter, actor: str, cap: int, now: float
) -> tuple[list[RequeuedJob], list[str]]:
    """The pairs made and their queues, in one write transaction."""

    def run() -> tuple[list[RequeuedJob], list[str]]:
        made, queues = [], []
        for old in _match(db, "bulk_archive", filter, cap):
            params = {"id": old, "new_id": new_job_id(), "actor": actor, "now": now}
            row = db.conn.execute(db.q["archive_requeue"], params).fetchone()
            if row is not None:
                made.append(RequeuedJob(archived_id=old, new_id=str(params["new_id"])))
                queues.append(str(row[0]))
        if queues:
            ensure_queues(db, queues, now)
        return made, queues

    return db.write(run)


def _delete(db: Database, filter: JobFilter, cap: int) -> list[str]:
    def run() -> list[str]:
        wanted = _match(db, "bulk_archive", filter, cap)
        if not wanted:
            return []
        rows = db.conn.execute(db.q["archive_delete"], {"ids": json.dumps(wanted)}).fetchall()
        deleted = {row[0] for row in rows}
        if deleted:  # a deleted job takes its edges (as a child) and its attempts with it
            gone = json.dumps(sorted(deleted))
            db.conn.execute(db.q["edges_unlink"], {"ids": gone})
            db.conn.execute(db.q["attempts_forget"], {"ids": gone})
        return [i for i in wanted if i in deleted]

    return db.write(run)


def _run_now(
    db: Database, ids: tuple[str, ...], actor: str, now: float
) -> tuple[list[str], list[str]]:
    def run() -> tuple[list[str], list[str]]:
        params = {"ids": json.dumps(list(ids)), "actor": actor, "now": now}
        rows = db.conn.execute(db.q["jobs_run_now"], params).fetchall()
        moved = {row[0] for row in rows}
        return [i for i in ids if i in moved], [str(row[1]) for row in rows]

    return db.write(run)


class SQLiteBulk(SQLiteJobs):
    """Bulk operator commands over ``jobs_hot`` and ``jobs_archive``."""

    async def jobs_preview(
        self, pillar: Pillar, filter: JobFilter, cap: int, sample: int
    ) -> Preview:
        return await self._db.call(_preview, pillar, filter, cap, sample)

    async def jobs_cancel_by_filter(
        self, filter: JobFilter, actor: str, cap: int, now: datetime | None
    ) -> CancelResult:
        wanted = await self._db.call(_hot_ids, filter, cap)
        if not wanted:
            return CancelResult(cancelled=(), requested=(), not_found=())
        return await self.jobs_cancel(tuple(wanted), actor, now)

    async def archive_requeue_by_filter(
        self, filter: JobFilter, actor: str, cap: int, now: datetime | None
    ) -> list[RequeuedJob]:
        made, queues = await self._db.call(_requeue, filter, actor, cap, ts_now(now))
        if queues:
            broadcast_jobs(self._db.key, queues)
        return made

    async def archive_delete_by_filter(self, filter: JobFilter, cap: int) -> list[str]:
        return await self._db.call(_delete, filter, cap)

    async def jobs_run_now(
        self, ids: tuple[str, ...], actor: str, now: datetime | None
    ) -> list[str]:
        moved, queues = await self._db.call(_run_now, ids, actor, ts_now(now))
        if queues:
            broadcast_jobs(self._db.key, queues)
        return moved
