"""Waiting for a job's end from a producer: what ``App.result`` and ``App.wait`` run.

One ``ResultWaiter`` per App shares one notifier (a LISTEN connection on PostgreSQL, the
signal file and in-process broadcast on SQLite) among every wait, started on first use. A wait
marks its job as waited on (``Backend.job_outcome(watch=True)``), so the statement that moves
the job out of the hot table notifies ``done`` in the same transaction, and the waiter reads
the outcome at once. The notifier is a shortcut, not the source of truth: the wait also reads
the outcome every ``POLL_SECONDS`` (``LOST_POLL_SECONDS`` while the notifier cannot listen),
so a lost notification costs latency, never an answer. A stream reader (``chokaq.streams``)
watches a job through the same notifier (``watching``). It must not hold SQL.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from .errors import (
    JobBlockedError,
    JobFailedError,
    NotFoundError,
    ResultUnavailableError,
    ValidationError,
)
from .limits import check_job_id
from .models import JobOutcome, Pillar

if TYPE_CHECKING:
    from .storage import Backend
    from .storage.driver import Notifier

__all__ = ["LOST_POLL_SECONDS", "POLL_SECONDS", "ResultWaiter", "value_of"]

# How often a wait reads the outcome although no notification came (a lost one, or a
# notifier that cannot listen right now).
POLL_SECONDS = 1.0
LOST_POLL_SECONDS = 0.1
# The notifier is stopped once no wait has run for this long (a web app that waited once does
# not keep a LISTEN connection, or SQLite's signal watch, for good); the next wait starts it.
IDLE_SECONDS = 30.0


def value_of(job_id: str, outcome: JobOutcome) -> Any:
    """The return value a finished job's outcome holds (JSON decoded; None for None), or the
    error that says why there is none."""
    if outcome.blocked_by is not None:
        raise JobBlockedError(job_id, outcome.blocked_by, outcome.blocked_reason)
    if outcome.pillar is Pillar.DLQ:
        raise JobFailedError(job_id, outcome.failure_reason, outcome.error, outcome.error_type)
    if outcome.result_error is not None:
        raise ResultUnavailableError(job_id, outcome.result_error)
    return None if outcome.result is None else json.loads(outcome.result)


def check_timeout(timeout: float | None) -> float | None:
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout != timeout:
        raise ValidationError("timeout_seconds", "must be a number of seconds or None")
    if timeout < 0:
        raise ValidationError("timeout_seconds", "must not be negative")
    return float(timeout)


class ResultWaiter:
    """Every wait of one App on one backend."""

    def __init__(self, backend: Backend) -> None:
        self._backend = backend
        self._notifier: Notifier | None = None
        self._starting: asyncio.Lock | None = None
        self._waiting: dict[str, set[asyncio.Event]] = {}
        self._idle: asyncio.TimerHandle | None = None
        self._stopping: asyncio.Future[None] | None = None

    async def outcome(self, job_id: str, timeout: float | None) -> JobOutcome:
        """The outcome of job ``job_id`` once it has left the hot table, or is blocked (it
        waits on a job in the DLQ: it cannot leave until an operator acts). Raises
        ``TimeoutError`` when it has not within ``timeout`` seconds (None: no limit) and
        ``NotFoundError`` when no pillar holds it (never stored, or purged)."""
        check_job_id("job_id", job_id)
        limit = check_timeout(timeout)
        loop = asyncio.get_running_loop()
        deadline = None if limit is None else loop.time() + limit
        async with self.watching(job_id) as event:
            watch = True  # the mark stays on the row: later reads need not write it again
            while True:
                event.clear()
                found = await self._backend.job_outcome(id=job_id, watch=watch)
                watch = False
                if found is None:
                    raise NotFoundError(f"job {job_id} is not stored (never enqueued, or purged)")
                if found.pillar is not Pillar.HOT or found.blocked_by is not None:
                    return found
                pause = self.poll_seconds()
                if deadline is not None:
                    left = deadline - loop.time()
                    if left <= 0:
                        raise TimeoutError(f"job {job_id} has not finished within {limit:g} s")
                    pause = min(pause, left)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(event.wait(), pause)

    @contextlib.asynccontextmanager
    async def watching(self, job_id: str) -> AsyncIterator[asyncio.Event]:
        """An event the notifier sets whenever job ``job_id`` may have changed (it left the
        hot table, or wrote a stream item), for as long as the block runs. The job must be
        marked waited on (``job_outcome(watch=True)``) for its statements to tell; the caller
        clears the event before each read, so nothing that commits after the read is missed."""
        loop = asyncio.get_running_loop()
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None
        await self._listen()
        event = asyncio.Event()
        self._waiting.setdefault(job_id, set()).add(event)
        try:
            yield event
        finally:
            events = self._waiting.get(job_id)
            if events is not None:
                events.discard(event)
                if not events:
                    del self._waiting[job_id]
            if not self._waiting and self._idle is None:
                self._idle = loop.call_later(IDLE_SECONDS, self._stop_idle)

    def poll_seconds(self) -> float:
        """How long a watcher waits for a notification before it reads anyway."""
        healthy = self._notifier is not None and self._notifier.healthy
        return POLL_SECONDS if healthy else LOST_POLL_SECONDS

    async def _listen(self) -> None:
        if self._notifier is not None:
            return
        if self._starting is None:
            self._starting = asyncio.Lock()
        async with self._starting:
            if self._notifier is not None:
                return
            notifier = self._backend.notifier()
            # A notifier that cannot listen now keeps trying (PostgreSQL); the waits poll
            # faster meanwhile.
            with contextlib.suppress(Exception):
                await notifier.start(_ignore, _ignore, self._done)
            self._notifier = notifier

    def _done(self, job_id: str) -> None:
        """A waited job left the hot table or wrote a stream item ("" : some waited job, or the
        listener was away)."""
        if job_id:
            targets = self._waiting.get(job_id, ())
        else:
            targets = {event for events in self._waiting.values() for event in events}
        for event in targets:
            event.set()

    def _stop_idle(self) -> None:
        self._idle = None
        if not self._waiting and self._notifier is not None:
            notifier, self._notifier = self._notifier, None
            self._stopping = asyncio.ensure_future(notifier.stop())

    async def close(self) -> None:
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None
        stopping, self._stopping = self._stopping, None
        if stopping is not None:
            with contextlib.suppress(Exception):
                await stopping
        notifier, self._notifier = self._notifier, None
        if notifier is not None:
            await notifier.stop()


def _ignore(value: str) -> None:
    """Work and cancel notifications: a waiter has no use for them."""
