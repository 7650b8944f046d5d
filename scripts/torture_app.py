"""The torture run's worker app: a mixed workload whose handlers each append a ledger row.

Run by ``scripts/torture.py`` as ``chokaq worker --app scripts.torture_app:app`` on the store named
by ``CHOKAQ_DATABASE_URL`` / ``CHOKAQ_SCHEMA``. Every execution first appends one row to the
ledger table (``torture_ledger`` in the test schema, or in the SQLite file) in its own
transaction: job id, attempt, worker id, pid and the lease token the row holds at that moment.
The run's checks compare the ledger with the final rows. A ledger write that fails because the
database is down is retried for a while, so a restart does not change a job's outcome category.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import time
from typing import Any

import psycopg

from chokaq import (
    App,
    CircuitPolicy,
    FatalError,
    JobContext,
    RetryPolicy,
    ThrottledError,
    WorkerSettings,
)

URL = os.environ.get("CHOKAQ_DATABASE_URL", "sqlite:///torture.db")
SCHEMA = os.environ.get("CHOKAQ_SCHEMA", "chokaq")
LEDGER_RETRY_SECONDS = 60.0


def _f(name: str, default: float) -> float:
    return float(os.environ.get(name, default))


SETTINGS = WorkerSettings(
    concurrency=int(os.environ.get("TORTURE_CONCURRENCY", "8")),
    prefetch=int(os.environ.get("TORTURE_PREFETCH", "2")),
    heartbeat_min_seconds=0.2,
    heartbeat_max_seconds=0.4,
    zombie_timeout_seconds=_f("TORTURE_ZOMBIE_TIMEOUT", 3.0),
    fetched_timeout_seconds=_f("TORTURE_FETCHED_TIMEOUT", 3.0),
    rescue_interval_seconds=_f("TORTURE_RESCUE_INTERVAL", 0.5),
    leadership_lease_seconds=_f("TORTURE_LEASE", 2.0),
    poll_interval_seconds=0.1,
    worker_beat_interval_seconds=0.5,
    shutdown_grace_seconds=_f("TORTURE_GRACE", 1.0),
    retry=RetryPolicy(max_attempts=3, base_delay_seconds=0.1, jitter_seconds=0.05),
    circuit=CircuitPolicy(threshold=30, window_seconds=5.0, break_seconds=0.5),
    # The run's no_such_handler jobs must be settled (REJECTED) when the oracle looks: no grace.
    unknown_type_grace_seconds=0.0,
)

app = App(URL, schema=SCHEMA, auto_migrate=True, worker=SETTINGS)

LEDGER_PG = """
CREATE TABLE IF NOT EXISTS {schema}.torture_ledger (
    seq         bigserial PRIMARY KEY,
    job_id      uuid NOT NULL,
    type        text NOT NULL,
    attempt     integer NOT NULL,
    worker_id   text NOT NULL,
    pid         integer NOT NULL,
    lease_token uuid,
    started     double precision,
    at          timestamptz NOT NULL DEFAULT clock_timestamp()
)"""

LEDGER_SQLITE = """
CREATE TABLE IF NOT EXISTS torture_ledger (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id      TEXT NOT NULL,
    type        TEXT NOT NULL,
    attempt     INTEGER NOT NULL,
    worker_id   TEXT NOT NULL,
    pid         INTEGER NOT NULL,
    lease_token TEXT,
    started     REAL,
    at          REAL NOT NULL
)"""


def sqlite_path(url: str = URL) -> str:
    return url.removeprefix("sqlite:///")


class Ledger:
    """Appends execution rows; one connection per worker process (PostgreSQL: a small pool)."""

    def __init__(self) -> None:
        self._pool: Any = None

    async def append(self, ctx: JobContext) -> None:
        # Each handler awaits this first, so this line runs as the handler starts (no await
        # before it): the time the oracle compares with the rescue of a row that lost its lease.
        started = time.time()
        deadline = time.monotonic() + LEDGER_RETRY_SECONDS
        delay = 0.05
        while True:
            try:
                if URL.startswith("sqlite"):
                    await asyncio.to_thread(self._append_sqlite, ctx, started)
                else:
                    await self._append_pg(ctx, started)
                return
            except (sqlite3.OperationalError, OSError, psycopg.OperationalError):
                # The database is restarting or out of reach: try again for a while.
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(delay)
                delay = min(1.0, delay * 2)

    async def _append_pg(self, ctx: JobContext, started: float) -> None:
        from psycopg import sql
        from psycopg_pool import AsyncConnectionPool

        if self._pool is None:
            pool = AsyncConnectionPool(
                URL, min_size=1, max_size=4, kwargs={"autocommit": True}, open=False, timeout=5
            )
            await pool.open(wait=False)
            self._pool = pool
        query = sql.SQL(
            "INSERT INTO {s}.torture_ledger"
            " (job_id, type, attempt, worker_id, pid, lease_token, started)"
            " SELECT %(id)s::uuid, %(type)s, %(attempt)s, %(worker)s, %(pid)s,"
            " (SELECT lease_token FROM {s}.jobs_hot WHERE id = %(id)s::uuid), %(started)s"
        ).format(s=sql.Identifier(SCHEMA))
        async with self._pool.connection() as conn:
            await conn.execute(query, {**_params(ctx), "started": started})

    def _append_sqlite(self, ctx: JobContext, started: float) -> None:
        conn = sqlite3.connect(sqlite_path(), timeout=30, isolation_level=None)
        try:
            conn.execute(
                "INSERT INTO torture_ledger (job_id, type, attempt, worker_id, pid, lease_token,"
                " started, at) SELECT :id, :type, :attempt, :worker, :pid,"
                f" (SELECT lease_token FROM {SCHEMA}_jobs_hot WHERE id = :id), :started, :at",
                {**_params(ctx), "started": started, "at": time.time()},
            )
        finally:
            conn.close()


def _params(ctx: JobContext) -> dict[str, Any]:
    return {
        "id": ctx.job_id,
        "type": ctx.type,
        "attempt": ctx.attempt,
        "worker": ctx.worker_id,
        "pid": os.getpid(),
    }


LEDGER = Ledger()


@app.job(queue="fast")
async def fast(n: int, ctx: JobContext) -> None:
    await LEDGER.append(ctx)


@app.job(queue="slow")
async def slow(seconds: float, ctx: JobContext) -> None:
    await LEDGER.append(ctx)
    await asyncio.sleep(seconds)


@app.job(queue="flaky")
async def flaky(fail_until: int, ctx: JobContext) -> None:
    """Raises on attempts below ``fail_until`` (3 or more: always, ending as Transient)."""
    await LEDGER.append(ctx)
    if ctx.attempt < fail_until:
        raise RuntimeError(f"flaky: attempt {ctx.attempt} fails on purpose")


@app.job(queue="flaky")
async def fatal(n: int, ctx: JobContext) -> None:
    await LEDGER.append(ctx)
    raise FatalError("fatal on purpose")


@app.job(queue="slow", timeout=0.5)
async def overrun(n: int, ctx: JobContext) -> None:
    """Never returns within its 0.5 s timeout."""
    await LEDGER.append(ctx)
    await asyncio.sleep(30)


@app.job(queue="throttled")
async def throttled(n: int, ctx: JobContext) -> None:
    """Throttled on the first attempt, succeeds on the second."""
    await LEDGER.append(ctx)
    if ctx.attempt < 2:
        raise ThrottledError("slow down", retry_after_seconds=0.2)


@app.job(queue="fast")
async def unique(key: str, ctx: JobContext) -> None:
    """Enqueued twice with the same idempotency key."""
    await LEDGER.append(ctx)


@app.job(queue="part")
async def hold(seconds: float, ctx: JobContext) -> None:
    """The partition test's job: runs ``seconds`` (long enough to be cut off)."""
    await LEDGER.append(ctx)
    await asyncio.sleep(seconds)
