"""Notification and leadership on PostgreSQL: LISTEN/NOTIFY and session advisory locks.

Owns the two dedicated (non-pool) connections a worker keeps: one that LISTENs on the schema's
channel and dispatches wake-ups and cancel requests, and one that holds the leadership lock. It
must not run job transitions; the statements it sends are passed in by the driver.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any, LiteralString

import psycopg

from ...errors import StorageUnavailableError
from ..driver import Leadership, Notifier

__all__ = ["PgLeadership", "PgNotifier"]

Connect = Callable[[], Awaitable[psycopg.AsyncConnection[Any]]]

CANCEL_PREFIX = "cancel:"


class PgNotifier(Notifier):
    """Listens on ``chokaq_<schema>``: a queue name wakes fetchers, ``cancel:<id>`` cancels."""

    def __init__(self, connect: Connect, listen: LiteralString) -> None:
        self._connect = connect
        self._listen = listen
        self._conn: psycopg.AsyncConnection[Any] | None = None
        self._task: asyncio.Task[None] | None = None
        self._healthy = False

    @property
    def healthy(self) -> bool:
        return self._healthy

    async def start(
        self,
        on_jobs: Callable[[str], None],
        on_cancel: Callable[[str], None],
    ) -> None:
        await self.stop()
        conn = await self._connect()
        try:
            await conn.execute(self._listen)
        except BaseException:
            await conn.close()
            raise
        self._conn = conn
        self._healthy = True
        self._task = asyncio.create_task(
            self._deliver(conn, on_jobs, on_cancel), name="chokaq-pg-listen"
        )

    async def _deliver(
        self,
        conn: psycopg.AsyncConnection[Any],
        on_jobs: Callable[[str], None],
        on_cancel: Callable[[str], None],
    ) -> None:
        try:
            async for note in conn.notifies():
                payload = note.payload
                try:
                    if payload.startswith(CANCEL_PREFIX):
                        on_cancel(payload[len(CANCEL_PREFIX) :])
                    else:
                        on_jobs(payload)
                except Exception:  # a callback must never end delivery
                    pass
        except asyncio.CancelledError:
            raise
        except Exception:
            pass
        # The generator ends only when the connection is gone: the worker falls back to polling.
        self._healthy = False

    async def stop(self) -> None:
        task, self._task = self._task, None
        conn, self._conn = self._conn, None
        self._healthy = False
        if task is not None:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.close()


class PgLeadership(Leadership):
    """A session advisory lock on a dedicated connection; re-acquired after a lost connection."""

    def __init__(
        self,
        connect: Connect,
        *,
        key: str,
        try_lock: LiteralString,
        unlock: LiteralString,
        ping: LiteralString,
    ) -> None:
        self._connect = connect
        self._key = key
        self._try_lock = try_lock
        self._unlock = unlock
        self._ping = ping
        self._conn: psycopg.AsyncConnection[Any] | None = None
        self._held = False

    async def try_acquire(self) -> bool:
        if self._held and self._conn is not None:
            try:
                await self._conn.execute(self._ping)
                return True
            except psycopg.Error:
                # The session (and with it the lock) is gone: start over on a new connection.
                await self._drop()
        if self._conn is None or self._conn.closed:
            try:
                self._conn = await self._connect()
            except psycopg.Error as exc:
                # Translated like every backend error, so maintenance logs a failed pass and
                # tries again instead of its side task dying while the database is away.
                raise StorageUnavailableError(f"PostgreSQL is unavailable: {exc}") from exc
        try:
            cur = await self._conn.execute(self._try_lock, {"key": self._key})
            row = await cur.fetchone()
        except psycopg.Error:
            await self._drop()
            return False
        self._held = bool(row and row[0])
        return self._held

    async def release(self) -> None:
        if self._conn is not None and self._held:
            with contextlib.suppress(psycopg.Error):
                await self._conn.execute(self._unlock, {"key": self._key})
        await self._drop()

    async def _drop(self) -> None:
        conn, self._conn = self._conn, None
        self._held = False
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.close()
