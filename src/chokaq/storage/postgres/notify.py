"""Notification on PostgreSQL: LISTEN/NOTIFY.

Owns the dedicated (non-pool) connection a worker keeps that LISTENs on the schema's channel
and dispatches wake-ups and cancel requests (re-established with backoff when it is lost), and
the format of the channel's payloads (leadership is a lease in a table: ``leadership``). It must
not run job transitions; the statements it sends are passed in by the driver.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Awaitable, Callable
from logging import WARNING
from typing import Any, LiteralString, NamedTuple

import psycopg

from ...logs import Event, log_event
from ..driver import Notifier

__all__ = ["CANCEL_TAG", "DONE_TAG", "QUEUE_TAG", "PgNotifier", "parse_payload"]

Connect = Callable[[], Awaitable[psycopg.AsyncConnection[Any]]]

# Every payload on the channel starts with a tag, so a queue name can never read as a cancel
# request (a queue named "cancel:x" once did): ``j:<queue>`` is work committed to a queue,
# ``c:<job id>`` a cancel request for a running job, ``d:<job id>`` a job someone waits on that
# left the hot table or wrote a stream item (streams_emit). The statements in sql/*.sql write them.
QUEUE_TAG = "j:"
CANCEL_TAG = "c:"
DONE_TAG = "d:"

# After the listening connection is lost, it is re-established with a backoff from the first
# figure doubling to the second, each wait jittered down by up to half (so a restarted server
# is not met by every worker at once).
RELISTEN_MIN_SECONDS = 0.1
RELISTEN_MAX_SECONDS = 5.0
# A connection that dies without a word (a pooler or a network dropping it silently) is found
# by repeating the LISTEN (a no-op on a live session) after this long without a notification,
# with this long for the answer.
KEEPALIVE_SECONDS = 15.0
KEEPALIVE_TIMEOUT_SECONDS = 10.0


def parse_payload(payload: str) -> tuple[str, str]:
    """``("jobs", queue)``, ``("cancel", job_id)`` or ``("done", job_id)``; a payload without a
    known tag (a sender of another chokaq version) reads as ``("jobs", "")``: "some queue", a
    harmless extra fetch."""
    if payload.startswith(QUEUE_TAG):
        return "jobs", payload[len(QUEUE_TAG) :]
    if payload.startswith(CANCEL_TAG):
        return "cancel", payload[len(CANCEL_TAG) :]
    if payload.startswith(DONE_TAG):
        return "done", payload[len(DONE_TAG) :]
    return "jobs", ""


def _ignore(value: str) -> None:
    """The callback of a kind nobody listens for."""


class _Callbacks(NamedTuple):
    on_jobs: Callable[[str], None]
    on_cancel: Callable[[str], None]
    on_done: Callable[[str], None]

    def of(self, kind: str) -> Callable[[str], None]:
        if kind == "cancel":
            return self.on_cancel
        if kind == "done":
            return self.on_done
        return self.on_jobs


class PgNotifier(Notifier):
    """Listens on ``chokaq_<schema>`` and keeps listening: a lost connection is replaced.

    While it is away ``healthy`` is False (the worker polls fast) and notifications sent in the
    meantime are lost, so once it listens again it wakes the fetchers and asks for a heartbeat
    of every running job (``on_jobs("")``, ``on_cancel("")``): nothing missed stays missed.
    """

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
        on_done: Callable[[str], None] | None = None,
    ) -> None:
        await self.stop()
        callbacks = _Callbacks(on_jobs, on_cancel, on_done or _ignore)
        try:
            self._conn = await self._open()
        except Exception as exc:
            # Raise so the worker says it polls, but keep trying: a server that was away, or
            # out of connections, at start must not leave the worker polling for good.
            lost = f"{type(exc).__name__}: {exc}".strip()
            self._task = asyncio.create_task(
                self._keep(callbacks, lost=lost), name="chokaq-pg-listen"
            )
            raise
        self._healthy = True
        self._task = asyncio.create_task(self._keep(callbacks), name="chokaq-pg-listen")

    async def _open(self) -> psycopg.AsyncConnection[Any]:
        conn = await self._connect()
        try:
            await conn.execute(self._listen)
        except BaseException:
            await conn.close()
            raise
        return conn

    async def _keep(self, callbacks: _Callbacks, *, lost: str | None = None) -> None:
        """Deliver until the connection is lost, then listen again, for as long as it runs;
        ``lost`` (why the first connection failed) starts it listening again at once."""
        while True:
            if lost is None:
                conn = self._conn
                assert conn is not None
                error = await self._deliver(conn, callbacks)
                self._healthy = False
                self._conn = None
                with contextlib.suppress(Exception):
                    await conn.close()
            else:
                error, lost = lost, None
            lost_at = time.monotonic()
            log_event(
                Event.NOTIFY_LISTEN_LOST,
                "lost the LISTEN connection; polling until it is back",
                level=WARNING,
                error=error,
            )
            self._conn, attempts = await self._relisten()
            self._healthy = True
            log_event(
                Event.NOTIFY_LISTEN_RESTORED,
                "listening for notifications again",
                attempts=attempts,
                down_seconds=round(time.monotonic() - lost_at, 3),
            )
            for callback in callbacks:
                with contextlib.suppress(Exception):
                    callback("")

    async def _relisten(self) -> tuple[psycopg.AsyncConnection[Any], int]:
        """A new listening connection, tried with a bounded, jittered backoff until one works;
        returns it and how many attempts it took."""
        delay = RELISTEN_MIN_SECONDS
        attempts = 0
        while True:
            await asyncio.sleep(delay * random.uniform(0.5, 1.0))
            attempts += 1
            try:
                return await self._open(), attempts
            except (psycopg.Error, OSError):
                delay = min(delay * 2, RELISTEN_MAX_SECONDS)

    async def _deliver(self, conn: psycopg.AsyncConnection[Any], callbacks: _Callbacks) -> str:
        """Dispatch notifications until the connection fails; returns why it failed."""
        try:
            while True:
                async for note in conn.notifies(timeout=KEEPALIVE_SECONDS):
                    kind, value = parse_payload(note.payload)
                    with contextlib.suppress(Exception):  # a callback must never end delivery
                        callbacks.of(kind)(value)
                # Quiet for a while: make sure the session is still there.
                await asyncio.wait_for(conn.execute(self._listen), KEEPALIVE_TIMEOUT_SECONDS)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}".strip()

    async def stop(self) -> None:
        task, self._task = self._task, None
        self._healthy = False
        if task is not None:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.close()
