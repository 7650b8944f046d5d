"""Cancel racing a claim or a start: the request is stored and the running job hears it.

A second connection holds the job's row in an open transaction that claims it (the real claim
statement, ``FOR UPDATE SKIP LOCKED``, with ``start``) or starts it (Fetched -> Processing), as
a worker does. Cancel runs while that transaction is open and must wait for it, then see the
job as it is after the commit: Processing, so the answer is "requested", the request is stored,
and the owner's next heartbeat reports it. (PostgreSQL once answered ``not_found`` and stored
nothing: both halves of its cancel statement read the row as it was before the claim.) SQLite
serializes writers on the file, so there the cancel simply runs after the commit; the answer
must be the same.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from typing import Any

import psycopg
import pytest
from conformance import T0, at, claim, enqueue

from chokaq.ids import new_lease_token
from chokaq.models import Heartbeat, JobStatus, Lease

RACES = ["claim", "start"]


class _Holder:
    """A transaction on a second connection that claims or starts one job and stays open."""

    def __init__(self, store: Any, backend: Any) -> None:
        self.store = store
        self.backend = backend
        self.conn: Any = None

    async def hold(self, race: str, job_id: str) -> Lease:
        if self.store.dialect == "sqlite":
            return self._hold_sqlite(race, job_id)
        return await self._hold_postgres(race, job_id)

    def _hold_sqlite(self, race: str, job_id: str) -> Lease:
        path = self.store.url.removeprefix("sqlite:///")
        self.conn = sqlite3.connect(path, isolation_level=None)
        self.conn.execute("BEGIN IMMEDIATE")
        token = new_lease_token()
        table = f"{self.store.schema}_jobs_hot"
        # What the claim (with start) and the start statements leave behind.
        self.conn.execute(
            f"UPDATE {table} SET status = 2, worker_id = 'w1', lease_token = ?, "
            "attempt_count = attempt_count + 1, started_at = ?, heartbeat_at = ? "
            "WHERE id = ? AND status = ?",
            (token, T0.timestamp(), T0.timestamp(), job_id, 0 if race == "claim" else 1),
        )
        return Lease(job_id=job_id, worker_id="w1", token=token)

    async def _hold_postgres(self, race: str, job_id: str) -> Lease:
        from chokaq.storage.postgres.rows import claimed_job

        q = self.backend.driver._q
        self.conn = await psycopg.AsyncConnection.connect(self.store.url)  # not autocommit
        if race == "claim":
            params = {
                "worker_id": "w1",
                "limit": 10,
                "queues": None,
                "exclude": [],
                "start": True,
                "now": T0,
            }
            cur = await self.conn.execute(q["jobs_fetch"], params)
            (row,) = await cur.fetchall()
            return claimed_job(row).lease
        lease = self.lease
        params = {
            "ids": [lease.job_id],
            "workers": [lease.worker_id],
            "tokens": [lease.token],
            "now": T0,
        }
        cur = await self.conn.execute(q["jobs_start"], params)
        assert len(await cur.fetchall()) == 1
        return lease

    async def commit(self) -> None:
        if self.store.dialect == "sqlite":
            self.conn.execute("COMMIT")
        else:
            await self.conn.commit()

    async def close(self) -> None:
        if self.conn is not None:
            if self.store.dialect == "sqlite":
                self.conn.close()
            else:
                await self.conn.close()


def _waiting_on_a_lock(url: str, schema: str) -> bool:
    """Whether a statement on ``schema`` is waiting for a row lock (PostgreSQL)."""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
            "AND query LIKE %s AND pid <> pg_backend_pid()",
            (f"%{schema}%",),
        ).fetchone()
    return bool(row and row[0])


@pytest.mark.parametrize("race", RACES)
async def test_cancel_while_a_claim_or_start_holds_the_row_stores_the_request(
    backend: Any, store: Any, raw: Any, race: str
) -> None:
    (job_id,) = await enqueue(backend)
    holder = _Holder(store, backend)
    if race == "start":
        (fetched,) = await claim(backend, start=False)
        holder.lease = fetched.lease  # type: ignore[attr-defined]
    try:
        lease = await holder.hold(race, job_id)
        cancel = asyncio.create_task(backend.jobs_cancel(ids=[job_id], actor="ops", now=at(1)))
        if store.dialect == "postgres":
            # Deterministic overlap: the cancel is blocked on the row the claim holds.
            deadline = time.monotonic() + 10
            while not await asyncio.to_thread(_waiting_on_a_lock, store.url, store.schema):
                assert not cancel.done(), cancel.result()
                assert time.monotonic() < deadline, "cancel never waited for the row lock"
                await asyncio.sleep(0.02)
        await holder.commit()
        result = await asyncio.wait_for(cancel, timeout=15)
    finally:
        await holder.close()
    assert result.requested == (job_id,), result
    assert result.cancelled == () and result.not_found == ()
    view = await backend.job_get(job_id)
    assert view is not None and view.status is JobStatus.PROCESSING
    assert view.cancel_requested_at is not None and view.cancelled_by == "ops"
    (ack,) = await backend.jobs_heartbeat(beats=[Heartbeat(lease=lease)], now=at(2))
    assert ack.owned and ack.cancel_requested and ack.cancel_requested_by == "ops"
