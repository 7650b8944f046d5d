"""The PostgreSQL driver's foundation: the connection pool, the loaded queries and migrations.

Owns connecting (an ``AsyncConnectionPool`` of autocommit connections in UTC, plus dedicated
"lane" connections for the worker's hottest statements), composing every named query once with
the quoted schema, translating psycopg's errors into our tree, and bringing the schema up to
date under an advisory lock. The operations live in the per-area mixins that subclass
``PostgresCore`` (one module per storage area, ``jobs`` to ``leadership``; see ``driver``); the
statements it runs itself are ``sql/connection.sql``. This module must not hold SQL text.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import Any, LiteralString

import psycopg
from psycopg import pq, sql
from psycopg.rows import TupleRow
from psycopg_pool import AsyncConnectionPool

from ...errors import (
    ChokaqError,
    LeadershipLostError,
    SchemaError,
    StorageError,
    StorageUnavailableError,
)
from ...models import LeaderTerm
from ..driver import Driver, StorageSettings
from ..sqlfile import Migration, load_migrations, load_queries

__all__ = ["PostgresCore"]

# Every timestamp we read back is UTC. JIT compilation is off: PostgreSQL compiles a query
# whose estimated cost passes jit_above_cost on every run (it is not kept with a cached plan),
# and chokaq's statements are short index walks that never win it back. With 1,000,000 pending
# rows the claim's estimate passed the threshold and each claim spent 370 ms compiling for
# 0.2 ms of work.
SESSION_OPTIONS = "-c timezone=UTC -c jit=off"
# The lanes run the worker's and the producer's hottest statements, each prepared once and then
# run with a generic plan. By default PostgreSQL plans a prepared statement afresh for every
# run while a fresh plan looks cheaper than the generic one: for the claim that planning took
# 0.3 ms of the server's 0.7 ms a claim (and the plans came out the same).
LANE_OPTIONS = f"{SESSION_OPTIONS} -c plan_cache_mode=force_generic_plan"
_PACKAGE = "chokaq.storage.postgres"

Params = Mapping[str, Any]


def _compose(text: str, schema: str, channel: str) -> LiteralString:
    """Fill ``{schema}`` and ``{channel}`` with quoted identifiers; keep ``{order}`` and
    ``{keyset}`` for later."""
    composed = sql.SQL(text).format(
        schema=sql.Identifier(schema),
        channel=sql.Identifier(channel),
        order=sql.SQL("{order}"),
        keyset=sql.SQL("{keyset}"),
    )
    # Built only from our own files and quoted identifiers (mypy treats LiteralString as str).
    return composed.as_string(None)


class PostgresCore(Driver):
    """Pool, queries and migrations shared by every PostgreSQL operation."""

    def __init__(self, settings: StorageSettings) -> None:
        super().__init__(settings)
        self.schema = settings.schema
        self.channel = f"chokaq_{settings.schema.lower()}"
        self._pool: AsyncConnectionPool[psycopg.AsyncConnection[TupleRow]] | None = None
        self._lanes: dict[str, psycopg.AsyncConnection[TupleRow]] = {}
        self._lane_locks: dict[str, asyncio.Lock] = {}
        self._ensured_queues: set[str] = set()
        self._bulkheads: frozenset[str] = frozenset()
        self._bulkheads_read_at = float("-inf")  # monotonic seconds; -inf: read on next fetch
        self._migrations: list[Migration] = load_migrations(_PACKAGE)
        self._q: dict[str, LiteralString] = {
            name: _compose(text, self.schema, self.channel)
            for name, text in load_queries(_PACKAGE).items()
        }

    # -- errors -----------------------------------------------------------------------------

    def translate(self, exc: Exception) -> ChokaqError:
        if isinstance(exc, psycopg.errors.UndefinedTable | psycopg.errors.InvalidSchemaName):
            return SchemaError(
                f"the chokaq schema {self.schema!r} is missing or incomplete "
                f"(run `chokaq migrate`): {exc}"
            )
        if isinstance(exc, psycopg.OperationalError):
            return StorageUnavailableError(f"PostgreSQL is unavailable: {exc}")
        if isinstance(exc, psycopg.Error):
            return StorageError(f"PostgreSQL error ({type(exc).__name__}): {exc}")
        return StorageError(f"{type(exc).__name__}: {exc}")

    # -- connections ------------------------------------------------------------------------

    @property
    def pool(self) -> AsyncConnectionPool[psycopg.AsyncConnection[TupleRow]]:
        if self._pool is None:
            raise StorageError("the PostgreSQL store is not open (call `await backend.open()`)")
        return self._pool

    async def _rows(
        self, name: str, params: Params | None = None, *, lane: str | None = None
    ) -> list[tuple[Any, ...]]:
        """Run one named statement (its own transaction) and return all rows.

        ``lane`` names a dedicated connection for a statement the worker runs hundreds of
        times a second (claim, finalize, heartbeat): checking a connection out of the pool
        costs more than the statement's own client work. When the lane is busy, the pool
        serves the statement instead, so a lane never makes anything wait.
        """
        async with self._connection(lane) as conn:
            return await self._run(conn, name, params)

    @contextlib.asynccontextmanager
    async def _connection(
        self, lane: str | None = None
    ) -> AsyncIterator[psycopg.AsyncConnection[TupleRow]]:
        """The lane's dedicated connection when it is free, else a pooled one."""
        if lane is not None:
            lock = self._lane_locks.setdefault(lane, asyncio.Lock())
            if not lock.locked():
                async with lock:
                    conn = self._lanes.get(lane)
                    if conn is None or conn.closed:
                        conn = self._lanes[lane] = await self._connect(LANE_OPTIONS)
                    try:
                        yield conn
                    except psycopg.OperationalError:
                        self._lanes.pop(lane, None)
                        await conn.close()
                        raise
                    return
        async with self.pool.connection() as conn:
            yield conn

    async def _run(
        self, conn: psycopg.AsyncConnection[TupleRow], name: str, params: Params | None
    ) -> list[tuple[Any, ...]]:
        cur = await conn.execute(self._q[name], params)
        # pgresult.status, not cur.description: description builds a Column per field.
        result = cur.pgresult
        if result is None or result.status != pq.ExecStatus.TUPLES_OK:
            return []
        return await cur.fetchall()

    async def _rows_each(self, name: str, params: Params, ids: list[str]) -> list[tuple[Any, ...]]:
        """Run ``name`` for all ``ids`` at once; if that fails because one id collides with a
        row already in the target table, run it for each id in a savepoint of one transaction
        and skip the ones that collide, so one bad id cannot block the others. Any other error
        raises and changes nothing."""
        try:
            return await self._rows(name, {**params, "ids": ids})
        except psycopg.IntegrityError:
            if len(ids) == 1:
                return []
        rows: list[tuple[Any, ...]] = []
        async with self.pool.connection() as conn, conn.transaction():
            for job_id in ids:
                try:
                    async with conn.transaction():
                        rows.extend(await self._run(conn, name, {**params, "ids": [job_id]}))
                except psycopg.IntegrityError:
                    continue
        return rows

    async def _one(self, name: str, params: Params | None = None) -> tuple[Any, ...] | None:
        rows = await self._rows(name, params)
        return rows[0] if rows else None

    async def _count(self, name: str, params: Params | None = None) -> int:
        """Run one named statement and return how many rows it changed."""
        async with self.pool.connection() as conn:
            cur = await conn.execute(self._q[name], params)
            return max(cur.rowcount, 0)

    async def _fence(self, conn: psycopg.AsyncConnection[Any], fence: LeaderTerm | None) -> None:
        """Open a write made under leadership (inside its transaction): raise
        ``LeadershipLostError`` unless ``fence`` is the current term, and hold the term's row
        (FOR SHARE) until the transaction ends, so no rival takes over mid-write."""
        if fence is None:
            return
        params = {"name": fence.name, "holder": fence.holder, "epoch": fence.epoch}
        if not await self._run(conn, "leadership_fence", params):
            raise LeadershipLostError(fence)

    @contextlib.asynccontextmanager
    async def _fenced(
        self, fence: LeaderTerm | None
    ) -> AsyncIterator[psycopg.AsyncConnection[TupleRow]]:
        """A pooled connection in a transaction opened by ``_fence`` (no transaction at all
        when there is no fence: the statement commits on its own, as before)."""
        async with self.pool.connection() as conn:
            if fence is None:
                yield conn
                return
            async with conn.transaction():
                await self._fence(conn, fence)
                yield conn

    async def _connect(self, options: str = SESSION_OPTIONS) -> psycopg.AsyncConnection[TupleRow]:
        """A dedicated (non-pool) autocommit connection, for listening or a lane."""
        conn = await psycopg.AsyncConnection.connect(
            self.settings.url, autocommit=True, options=options
        )
        return conn

    # -- lifecycle --------------------------------------------------------------------------

    async def open(self) -> None:
        if self._pool is not None:
            return
        # One direct connection first, with a short timeout: a refused port, a missing
        # database or a bad password then fails now with PostgreSQL's own words, instead of
        # the pool retrying in the background for 30 s and reporting only a timeout.
        first = await psycopg.AsyncConnection.connect(
            self.settings.url,
            autocommit=True,
            options=SESSION_OPTIONS,
            connect_timeout=max(1, round(self.settings.connect_timeout_seconds)),
        )
        await first.close()
        pool: AsyncConnectionPool[psycopg.AsyncConnection[TupleRow]] = AsyncConnectionPool(
            self.settings.url,
            min_size=self.settings.pool_min_size,
            max_size=max(self.settings.pool_max_size, self.settings.pool_min_size),
            # Session settings travel with the connection request instead of a configure
            # callback: a pool closing while it grows cannot then drop a half-set-up connection.
            kwargs={"autocommit": True, "options": SESSION_OPTIONS},
            open=False,
            name=f"chokaq-{self.schema}",
        )
        try:
            await pool.open(wait=True, timeout=30.0)
        except Exception:
            await pool.close()
            raise
        self._pool = pool

    async def close(self) -> None:
        lanes, self._lanes = self._lanes, {}
        for conn in lanes.values():
            with contextlib.suppress(Exception):
                await conn.close()
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    # -- migrations -------------------------------------------------------------------------

    def latest_version(self) -> int:
        return self._migrations[-1].version if self._migrations else 0

    async def schema_version(self) -> int:
        async with self.pool.connection() as conn:
            cur = await conn.execute(self._q["migrate_has_ledger"], {"schema": self.schema})
            row = await cur.fetchone()
            if row is None or not row[0]:
                return 0
            cur = await conn.execute(self._q["schema_version"])
            row = await cur.fetchone()
            return int(row[0]) if row is not None else 0

    async def migrate(self, via_migrations: bool) -> list[int]:
        """Each step is one transaction that takes the schema's advisory lock first, so two
        processes racing apply every version exactly once."""
        applied: list[int] = []
        while True:
            step = await self._migrate_step(via_migrations=via_migrations)
            if not step:
                return applied
            applied.extend(step)

    async def _migrate_step(self, *, via_migrations: bool) -> list[int]:
        async with self.pool.connection() as conn, conn.transaction():
            await conn.execute(self._q["migrate_lock"], {"schema": self.schema})
            await conn.execute(self._q["migrate_ledger"])
            cur = await conn.execute(self._q["migrate_applied"])
            done = {int(row[0]) for row in await cur.fetchall()}
            pending = [m for m in self._migrations if m.version not in done]
            # A fresh install applies every migration in this one transaction; an upgrade (or
            # via_migrations) applies one per transaction, as a long-lived database would.
            batch = pending if not done and not via_migrations else pending[:1]
            for migration in batch:
                await conn.execute(_compose(migration.sql, self.schema, self.channel))
                await self._record(conn, migration)
            return [migration.version for migration in batch]

    async def _record(self, conn: psycopg.AsyncConnection[Any], migration: Migration) -> None:
        await conn.execute(
            self._q["migrate_record"], {"version": migration.version, "name": migration.name}
        )
