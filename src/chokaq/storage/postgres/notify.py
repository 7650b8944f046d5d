"""Notification on PostgreSQL: LISTEN/NOTIFY.

Owns the dedicated (non-pool) connection a worker keeps that LISTENs on the schema's channel
and dispatches wake-ups and cancel requests (leadership is a lease in a table: ``leadership``).
It must not run job transitions; the statements it sends are passed in by the driver.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any, LiteralString

import psycopg

from ..driver import Notifier

__all__ = ["PgNotifier"]

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
