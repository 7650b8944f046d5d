"""Durable jobs on SQLite: steps recorded under the lease, sleeps and event waits that suspend a
job, events, the wake pass and the resumption of durable zombies.

Each operation is one short write transaction on the connection's thread (SQLite's single
writer serialises a wait and a send of one key, which PostgreSQL does with an advisory lock);
workers are woken after the commit (``notify``). The statements are in ``sql/durable.sql``.
Arguments arrive checked (``chokaq.storage.durable``); it holds no SQL text.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from typing import Any

from ...models import (
    DurableCounts,
    LeaderTerm,
    Lease,
    NewJob,
    StepKind,
    StepRecord,
    StepState,
    StepWrite,
    WaitOutcome,
)
from ..links import counts_of, gathered, step_of, steps_by_job
from .claims import lease_params
from .connection import Database, SQLiteCore
from .jobs import enqueue_within
from .leadership import check_fence
from .notify import broadcast_jobs
from .rows import from_ts, ts_now

__all__ = ["SQLiteDurable"]


def _step(row: sqlite3.Row | tuple[Any, ...]) -> StepRecord:
    return step_of(row, from_ts)


def _open(db: Database, lease: Lease, name: str) -> tuple[bool, StepRecord | None]:
    """Whether the leased row is ours, and step ``name`` as recorded (None: not yet)."""
    row = db.conn.execute(db.q["durable_owner"], {**lease_params(lease), "name": name}).fetchone()
    if row is None:
        return False, None
    return True, None if row[1] is None else _step(tuple(row)[1:])


def _get(db: Database, job_id: str, name: str) -> StepRecord | None:
    row = db.conn.execute(db.q["steps_get"], {"id": job_id, "name": name}).fetchone()
    return None if row is None else _step(row)


def _settle(
    db: Database,
    job_id: str,
    name: str,
    now: float,
    value: str | None = None,
    error: str | None = None,
) -> StepRecord:
    params = {"id": job_id, "name": name, "now": now, "value": value, "error": error}
    return _step(db.conn.execute(db.q["steps_settle"], params).fetchone())


def _pending(
    db: Database,
    lease: Lease,
    name: str,
    kind: StepKind,
    key: str | None,
    wake_at: float | None,
    now: float,
    value: str | None = None,
) -> StepRecord:
    params = {
        "id": lease.job_id,
        "name": name,
        "kind": int(kind),
        "key": key,
        "wake_at": wake_at,
        "now": now,
        "value": value,
    }
    db.conn.execute(db.q["steps_pending"], params)
    step = _get(db, lease.job_id, name)
    assert step is not None
    return step


def _suspend(
    db: Database,
    lease: Lease,
    wake_at: datetime | None,
    key: str | None,
    now: float,
    gathering: str | None = None,
) -> WaitOutcome:
    params = {
        **lease_params(lease),
        "wake_at": None if wake_at is None else wake_at.timestamp(),
        "key": key,
        "now": now,
        "gathering": gathering,
    }
    return WaitOutcome(
        suspended=db.conn.execute(db.q["durable_suspend"], params).fetchone() is not None
    )


def _due(step: StepRecord, now: float) -> bool:
    # Compared to the microsecond, as the record holds its time (and as PostgreSQL's timestamptz
    # does): about a third of the process clock's readings round up to the next microsecond, so
    # ``wake_at.timestamp()`` put the end of a zero sleep or a zero timeout after ``now`` and
    # suspended the job that PostgreSQL answers at once.
    return step.wake_at is not None and step.wake_at <= datetime.fromtimestamp(now, UTC)


def _sleep(db: Database, lease: Lease, name: str, seconds: float, now: float) -> WaitOutcome:
    ours, step = _open(db, lease, name)
    if not ours:
        return WaitOutcome()
    if step is not None and step.state is StepState.DONE:
        return WaitOutcome(step=step)
    if step is None:
        step = _pending(db, lease, name, StepKind.SLEEP, None, now + seconds, now)
    if step.wake_at is None or _due(step, now):
        return WaitOutcome(step=_settle(db, lease.job_id, name, now))
    return _suspend(db, lease, step.wake_at, None, now)


def _wait(
    db: Database, lease: Lease, name: str, key: str, timeout: float | None, now: float
) -> WaitOutcome:
    ours, step = _open(db, lease, name)
    if not ours:
        return WaitOutcome()
    if step is not None and step.state is StepState.DONE:
        return WaitOutcome(step=step)
    if step is None:
        wake = None if timeout is None else now + timeout
        step = _pending(db, lease, name, StepKind.WAIT, key, wake, now)
    key = step.event_key or key
    until = None if step.wake_at is None else step.wake_at.timestamp()
    taken = db.conn.execute(
        db.q["events_take"], {"key": key, "now": now, "until": until}
    ).fetchone()
    if taken is not None:
        return WaitOutcome(step=_settle(db, lease.job_id, name, now, value=taken[0]))
    if _due(step, now):
        return WaitOutcome(step=_settle(db, lease.job_id, name, now, error="timeout"))
    return _suspend(db, lease, step.wake_at, key, now)


def _spawn(
    db: Database, lease: Lease, name: str, jobs: list[NewJob], now: float
) -> StepRecord | None:
    ours, step = _open(db, lease, name)
    if not ours:
        return None
    if step is not None:
        return step if step.state is StepState.DONE else None
    # In this write transaction: the spawn is recorded exactly when its children are enqueued.
    ids = [result.id for result in enqueue_within(db, jobs, now)]
    params = {"id": lease.job_id, "name": name, "value": json.dumps(ids), "now": now}
    row = db.conn.execute(db.q["steps_spawned"], params).fetchone()
    db.conn.execute(db.q["steps_spawn_edges"], {**params, "children": json.dumps(ids)})
    return _step(row)


def _gather(db: Database, lease: Lease, name: str, ids: list[str], now: float) -> WaitOutcome:
    ours, step = _open(db, lease, name)
    if not ours:
        return WaitOutcome()
    if step is not None and step.state is StepState.DONE:
        return WaitOutcome(step=step)
    rows = db.conn.execute(db.q["gather_outcomes"], {"ids": json.dumps(ids)}).fetchall()
    if any(row[1] for row in rows):
        if step is None:
            _pending(db, lease, name, StepKind.GATHER, None, None, now, json.dumps(ids))
        return _suspend(db, lease, None, None, now, name)
    if step is None:
        _pending(db, lease, name, StepKind.GATHER, None, None, now)
    value = json.dumps([gathered(tuple(row)) for row in rows])
    return WaitOutcome(step=_settle(db, lease.job_id, name, now, value=value))


def _send(
    db: Database, key: str, data: str, retention: float, now: float
) -> tuple[str | None, str | None]:
    conn, q = db.conn, db.q
    waiting = conn.execute(q["events_waiting"], {"key": key, "now": now}).fetchone()
    if waiting is None:
        conn.execute(
            q["events_keep"], {"key": key, "data": data, "now": now, "retention": retention}
        )
        return None, None
    job_id, queue = str(waiting[0]), str(waiting[1])
    conn.execute(q["events_deliver"], {"id": job_id, "data": data, "now": now})
    conn.execute(q["events_woke"], {"id": job_id, "now": now})
    return job_id, queue


def _resume(
    db: Database,
    types: dict[str, int],
    timeout: float,
    now: float,
    since: float | None,
    fence: LeaderTerm | None,
) -> list[tuple[str, str]]:
    conn, q = db.conn, db.q
    check_fence(db, fence)
    params = {"types": json.dumps(types), "timeout": timeout, "now": now, "since": since}
    resumed = []
    for job_id, queue, limit in conn.execute(q["durable_resume_candidates"], params).fetchall():
        error = (
            f"Zombie: heartbeat expired (no heartbeat for more than {limit:g} s); "
            "a durable job, resumed"
        )
        move = {"id": job_id, "now": now, "error": error}
        conn.execute(q["durable_resume_attempt"], move)
        if conn.execute(q["durable_resume_move"], move).rowcount:
            resumed.append((str(job_id), str(queue)))
            conn.execute(
                q["stats_bump"],
                {"queue": queue, "succeeded": 0, "failed": 0, "retried": 1, "now": now},
            )
    return resumed


class SQLiteDurable(SQLiteCore):
    """The durable-job operations: steps, sleeps, event waits, events, spawn and gather."""

    async def steps_list(self, job_id: str) -> list[StepRecord]:
        def run(db: Database) -> list[StepRecord]:
            rows = db.conn.execute(db.q["steps_list"], {"id": job_id}).fetchall()
            return [_step(row) for row in rows]

        return await self._db.call(run)

    async def steps_list_many(self, job_ids: list[str]) -> dict[str, list[StepRecord]]:
        def run(db: Database) -> dict[str, list[StepRecord]]:
            rows = db.conn.execute(db.q["steps_list_many"], {"ids": json.dumps(job_ids)})
            return steps_by_job(job_ids, map(_step, rows.fetchall()))

        return await self._db.call(run)

    async def steps_record_many(
        self, records: list[StepWrite], now: datetime | None
    ) -> list[StepRecord | None]:
        """One write transaction for the batch (SQLite's writes are serialised, so this is
        its one statement's worth): each record is checked against its own lease, in the
        transaction, and written only when it holds."""
        clock = ts_now(now)

        def one(record: StepWrite) -> StepRecord | None:
            if not _open(self._db, record.lease, record.name)[0]:
                return None
            params = {
                "id": record.lease.job_id,
                "name": record.name,
                "state": int(StepState.DONE if record.error is None else StepState.FAILED),
                "value": record.value,
                "error": record.error,
                "elapsed": record.elapsed_seconds,
                "now": clock,
            }
            row = self._db.conn.execute(self._db.q["steps_record"], params).fetchone()
            return None if row is None else _step(row)

        return await self._db.call(lambda db: db.write(lambda: [one(r) for r in records]))

    async def durable_sleep(
        self, lease: Lease, name: str, seconds: float, now: datetime | None
    ) -> WaitOutcome:
        clock = ts_now(now)
        return await self._db.call(lambda db: db.write(_sleep, db, lease, name, seconds, clock))

    async def durable_wait(
        self,
        lease: Lease,
        name: str,
        key: str,
        timeout_seconds: float | None,
        now: datetime | None,
    ) -> WaitOutcome:
        clock = ts_now(now)
        return await self._db.call(
            lambda db: db.write(_wait, db, lease, name, key, timeout_seconds, clock)
        )

    async def events_send(
        self, key: str, data: str, retention_seconds: float, now: datetime | None
    ) -> str | None:
        clock = ts_now(now)
        sent: tuple[str | None, str | None] = await self._db.call(
            lambda db: db.write(_send, db, key, data, retention_seconds, clock)
        )
        job_id, queue = sent
        if queue is not None:
            broadcast_jobs(self._db.key, [queue])
        return job_id

    async def durable_spawn(
        self, lease: Lease, name: str, jobs: list[NewJob], now: datetime | None
    ) -> StepRecord | None:
        clock = ts_now(now)
        step: StepRecord | None = await self._db.call(
            lambda db: db.write(_spawn, db, lease, name, jobs, clock)
        )
        if step is not None:
            broadcast_jobs(self._db.key, sorted({job.queue for job in jobs}))
        return step

    async def durable_gather(
        self, lease: Lease, name: str, ids: list[str], now: datetime | None
    ) -> WaitOutcome:
        clock = ts_now(now)
        return await self._db.call(lambda db: db.write(_gather, db, lease, name, ids, clock))

    async def steps_children(self, ids: list[str]) -> list[str]:
        def read(db: Database) -> list[str]:
            rows = db.conn.execute(db.q["steps_children"], {"ids": json.dumps(ids)}).fetchall()
            return [str(row[0]) for row in rows]

        return await self._db.call(read)

    async def durable_wake(self, now: datetime | None, limit: int) -> list[str]:
        params = {"now": ts_now(now), "limit": limit}

        def wake(db: Database) -> list[tuple[str, str]]:
            rows = db.conn.execute(db.q["durable_wake"], params).fetchall()
            rows += db.conn.execute(db.q["durable_wake_gathers"], params).fetchall()
            return [(str(row[0]), str(row[1])) for row in rows]

        woken = await self._db.call(lambda db: db.write(wake, db))
        if woken:
            broadcast_jobs(self._db.key, sorted({queue for _, queue in woken}))
        return [job_id for job_id, _ in woken]

    async def durable_resume(
        self,
        types: list[str],
        attempts: list[int],
        zombie_timeout_seconds: float,
        now: datetime | None,
        reachable_since: datetime | None,
        fence: LeaderTerm | None,
    ) -> list[str]:
        clock = ts_now(now)
        since = None if reachable_since is None else reachable_since.timestamp()
        limits = dict(zip(types, attempts, strict=True))
        resumed = await self._db.call(
            lambda db: db.write(_resume, db, limits, zombie_timeout_seconds, clock, since, fence)
        )
        if resumed:
            broadcast_jobs(self._db.key, sorted({queue for _, queue in resumed}))
        return [job_id for job_id, _ in resumed]

    async def durable_tidy(self, now: datetime | None, limit: int) -> int:
        params = {"now": ts_now(now), "limit": limit}

        def tidy(db: Database) -> int:
            pruned = db.conn.execute(db.q["events_prune"], params).rowcount
            return pruned + db.conn.execute(db.q["steps_tidy"], {"limit": limit}).rowcount

        return await self._db.call(lambda db: db.write(tidy, db))

    async def durable_counts(self, now: datetime | None) -> DurableCounts:
        params = {"now": ts_now(now)}

        def read(db: Database) -> list[tuple[Any, ...]]:
            return [tuple(row) for row in db.conn.execute(db.q["durable_counts"], params)]

        return counts_of(await self._db.call(read))
