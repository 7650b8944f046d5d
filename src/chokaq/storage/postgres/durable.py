"""Durable jobs on PostgreSQL: steps recorded under the lease, sleeps and event waits that
suspend a job, events, the wake pass and the resumption of durable zombies.

Owns turning these operations into the named statements of ``sql/durable.sql``: a step is one
statement; a sleep or a wait is one short transaction that holds the leased row (so a rescue
or a cancel waits for it) and, for a wait, the key's advisory lock (so an event is either found
by the wait or finds the suspended job). Arguments arrive checked (``chokaq.storage.durable``);
it holds no SQL text.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

import psycopg

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
from ..links import counts_of, gathered, step_of, steps_by_job, steps_in_order
from .connection import PostgresCore

__all__ = ["PostgresDurable"]


def _lease(lease: Lease) -> dict[str, Any]:
    return {"id": lease.job_id, "worker": lease.worker_id, "token": lease.token}


class PostgresDurable(PostgresCore):
    """The durable-job operations."""

    async def steps_list(self, job_id: str) -> list[StepRecord]:
        return [step_of(row) for row in await self._rows("steps_list", {"id": job_id})]

    async def steps_list_many(self, job_ids: list[str]) -> dict[str, list[StepRecord]]:
        return steps_by_job(
            job_ids, map(step_of, await self._rows("steps_list_many", {"ids": job_ids}))
        )

    async def steps_record_many(
        self, records: list[StepWrite], now: datetime | None
    ) -> list[StepRecord | None]:
        params = {
            "ids": [r.lease.job_id for r in records],
            "workers": [r.lease.worker_id for r in records],
            "tokens": [r.lease.token for r in records],
            "names": [r.name for r in records],
            "states": [
                int(StepState.DONE if r.error is None else StepState.FAILED) for r in records
            ],
            "values": [r.value for r in records],
            "errors": [r.error for r in records],
            "elapsed": [r.elapsed_seconds for r in records],
            "now": now,
        }
        rows = await self._rows("steps_record_many", params)
        return steps_in_order(records, map(step_of, rows))

    async def _durable_open(
        self, conn: psycopg.AsyncConnection[Any], lease: Lease, name: str, now: datetime | None
    ) -> tuple[datetime, StepRecord | None] | None:
        """Once the leased row is held: the transaction's clock and step ``name`` as recorded
        (None: not yet), read in the statement that holds the row; None: the job is not ours."""
        params = {**_lease(lease), "name": name, "now": now}
        rows = await self._run(conn, "durable_owner", params)
        if not rows:
            return None
        return rows[0][0], None if rows[0][1] is None else step_of(rows[0][1:])

    async def _durable_get(
        self, conn: psycopg.AsyncConnection[Any], job_id: str, name: str
    ) -> StepRecord | None:
        rows = await self._run(conn, "steps_get", {"id": job_id, "name": name})
        return step_of(rows[0]) if rows else None

    async def _durable_settle(
        self,
        conn: psycopg.AsyncConnection[Any],
        job_id: str,
        name: str,
        clock: datetime,
        value: str | None = None,
        error: str | None = None,
    ) -> StepRecord:
        params = {"id": job_id, "name": name, "now": clock, "value": value, "error": error}
        [row] = await self._run(conn, "steps_settle", params)
        return step_of(row)

    async def _durable_pending(
        self,
        conn: psycopg.AsyncConnection[Any],
        lease: Lease,
        name: str,
        kind: StepKind,
        key: str | None,
        wake_at: datetime | None,
        clock: datetime,
        value: str | None = None,
    ) -> StepRecord:
        params = {
            "id": lease.job_id,
            "name": name,
            "kind": int(kind),
            "key": key,
            "wake_at": wake_at,
            "now": clock,
            "value": value,
        }
        await self._run(conn, "steps_pending", params)
        step = await self._durable_get(conn, lease.job_id, name)
        assert step is not None
        return step

    async def _durable_suspend(
        self,
        conn: psycopg.AsyncConnection[Any],
        lease: Lease,
        wake_at: datetime | None,
        key: str | None,
        clock: datetime,
        gathering: str | None = None,
    ) -> WaitOutcome:
        params = {
            **_lease(lease),
            "wake_at": wake_at,
            "key": key,
            "now": clock,
            "gathering": gathering,
        }
        return WaitOutcome(suspended=bool(await self._run(conn, "durable_suspend", params)))

    async def durable_sleep(
        self, lease: Lease, name: str, seconds: float, now: datetime | None
    ) -> WaitOutcome:
        async with self.pool.connection() as conn, conn.transaction():
            opened = await self._durable_open(conn, lease, name, now)
            if opened is None:
                return WaitOutcome()
            clock, step = opened
            if step is not None and step.state is StepState.DONE:
                return WaitOutcome(step=step)
            if step is None:
                wake = clock + timedelta(seconds=seconds)
                kind = StepKind.SLEEP
                step = await self._durable_pending(conn, lease, name, kind, None, wake, clock)
            if step.wake_at is None or step.wake_at <= clock:
                settled = await self._durable_settle(conn, lease.job_id, name, clock)
                return WaitOutcome(step=settled)
            return await self._durable_suspend(conn, lease, step.wake_at, None, clock)

    async def durable_wait(
        self,
        lease: Lease,
        name: str,
        key: str,
        timeout_seconds: float | None,
        now: datetime | None,
    ) -> WaitOutcome:
        async with self.pool.connection() as conn, conn.transaction():
            opened = await self._durable_open(conn, lease, name, now)
            if opened is None:
                return WaitOutcome()
            clock, step = opened
            if step is not None and step.state is StepState.DONE:
                return WaitOutcome(step=step)
            # The key the wait first recorded holds on replay (the handler's code is the same).
            key = (step.event_key or key) if step is not None else key
            await self._run(conn, "events_lock", {"schema_key": f"{self.schema}:{key}"})
            if step is None:
                wake = None
                if timeout_seconds is not None:
                    wake = clock + timedelta(seconds=timeout_seconds)
                kind = StepKind.WAIT
                step = await self._durable_pending(conn, lease, name, kind, key, wake, clock)
            job = lease.job_id
            params = {"key": key, "now": clock, "until": step.wake_at}
            taken = await self._run(conn, "events_take", params)
            if taken:
                settled = await self._durable_settle(conn, job, name, clock, value=taken[0][0])
                return WaitOutcome(step=settled)
            if step.wake_at is not None and step.wake_at <= clock:
                settled = await self._durable_settle(conn, job, name, clock, error="timeout")
                return WaitOutcome(step=settled)
            return await self._durable_suspend(conn, lease, step.wake_at, key, clock)

    async def events_send(
        self, key: str, data: str, retention_seconds: float, now: datetime | None
    ) -> str | None:
        params = {
            "key": key,
            "data": data,
            "retention": retention_seconds,
            "now": now,
            "channel": self.channel,
        }
        async with self.pool.connection() as conn, conn.transaction():
            await self._run(conn, "events_lock", {"schema_key": f"{self.schema}:{key}"})
            rows = await self._run(conn, "events_send", params)
        woken = [row[0] for row in rows if row[0]]
        return woken[0] if woken else None

    async def durable_wake(self, now: datetime | None, limit: int) -> list[str]:
        params = {"now": now, "limit": limit, "channel": self.channel}
        woken = [row[0] for row in await self._rows("durable_wake", params) if row[0]]
        gathered = await self._rows("durable_wake_gathers", params)
        return woken + [row[0] for row in gathered if row[0]]

    async def durable_spawn(
        self, lease: Lease, name: str, jobs: list[NewJob], now: datetime | None
    ) -> StepRecord | None:
        async with self.pool.connection() as conn, conn.transaction():
            opened = await self._durable_open(conn, lease, name, now)
            if opened is None:
                return None
            clock, step = opened
            if step is not None:
                return step if step.state is StepState.DONE else None
            # The children go in this transaction (the caller-connection path of enqueue), so
            # the spawn is recorded exactly when they are: never twice, never half.
            results = await self.jobs_enqueue(jobs, clock, conn, None)
            ids = [result.id for result in results]
            params = {"id": lease.job_id, "name": name, "value": json.dumps(ids), "now": clock}
            [row] = await self._run(conn, "steps_spawned", params)
            await self._run(conn, "steps_spawn_edges", {**params, "children": ids})
        return step_of(row)

    async def durable_gather(
        self, lease: Lease, name: str, ids: list[str], now: datetime | None
    ) -> WaitOutcome:
        async with self.pool.connection() as conn, conn.transaction():
            opened = await self._durable_open(conn, lease, name, now)
            if opened is None:
                return WaitOutcome()
            clock, step = opened
            if step is not None and step.state is StepState.DONE:
                return WaitOutcome(step=step)
            rows = await self._run(conn, "gather_outcomes", {"ids": ids})
            if any(row[1] for row in rows):
                if step is None:
                    kind, text = StepKind.GATHER, json.dumps(ids)
                    await self._durable_pending(conn, lease, name, kind, None, None, clock, text)
                return await self._durable_suspend(conn, lease, None, None, clock, name)
            if step is None:
                await self._durable_pending(conn, lease, name, StepKind.GATHER, None, None, clock)
            value = json.dumps([gathered(row) for row in rows])
            job = lease.job_id
            return WaitOutcome(step=await self._durable_settle(conn, job, name, clock, value))

    async def steps_children(self, ids: list[str]) -> list[str]:
        return [str(row[0]) for row in await self._rows("steps_children", {"ids": ids})]

    async def durable_resume(
        self,
        types: list[str],
        attempts: list[int],
        zombie_timeout_seconds: float,
        now: datetime | None,
        reachable_since: datetime | None,
        fence: LeaderTerm | None,
    ) -> list[str]:
        params = {
            "types": types,
            "attempts": attempts,
            "timeout": zombie_timeout_seconds,
            "now": now,
            "since": reachable_since,
            "channel": self.channel,
        }
        async with self._fenced(fence) as conn:
            rows = await self._run(conn, "durable_resume", params)
        return [row[0] for row in rows if row[0]]

    async def durable_tidy(self, now: datetime | None, limit: int) -> int:
        params = {"now": now, "limit": limit}
        return await self._count("events_prune", params) + await self._count("steps_tidy", params)

    async def durable_counts(self, now: datetime | None) -> DurableCounts:
        return counts_of(await self._rows("durable_counts", {"now": now}))
