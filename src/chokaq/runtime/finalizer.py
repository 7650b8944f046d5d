"""Records job outcomes in batches: many succeed/fail/retry moves per round trip.

Each move stays atomic (the backend guarantees it); batching only saves round trips. When
storage is down the batch is kept and retried with backoff, so an outcome decided during an
outage is recorded once the database is back: a move applies whenever its lease still matches,
however late, and is refused (reported as not applied) only when the job was rescued from this
worker meanwhile. While it retries, the jobs it holds are heartbeated like running ones
(``retrying``), so that they are not taken for zombies in the meantime. Owns the queue of
pending moves; it decides nothing.
"""

from __future__ import annotations

import asyncio
import random
from collections import deque
from collections.abc import Callable
from typing import Any

from ..errors import StorageError
from ..logs import Event, log_event
from ..models import Lease, Move
from ..storage import Backend

__all__ = ["Finalizer"]


class Finalizer:
    """Collects moves and writes them in batches of at most ``batch_max``."""

    def __init__(
        self,
        backend: Backend,
        batch_max: int,
        on_result: Callable[[Move, Any, bool], None],
    ) -> None:
        self._backend = backend
        self._batch_max = batch_max
        self._on_result = on_result
        self._pending: deque[tuple[Move, Any]] = deque()
        self._ready = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._in_flight: list[tuple[Move, Any]] = []
        self._failing = False

    def submit(self, move: Move, tag: Any) -> None:
        """Queue ``move``; ``tag`` is handed back to ``on_result`` with whether it applied."""
        self._pending.append((move, tag))
        self._idle.clear()
        self._ready.set()

    def retrying(self) -> list[Lease]:
        """The leases of every move kept for a retry because writing failed (empty while
        writes succeed): their jobs finished, but until their moves apply they are still this
        worker's, and a row without heartbeats would be taken for a zombie."""
        if not self._failing:
            return []
        return [move.lease for move, _ in (*self._in_flight, *self._pending)]

    async def drain(self) -> None:
        """Wait until every submitted move has been written (or refused)."""
        while self._pending or self._in_flight:
            self._idle.clear()
            await self._idle.wait()

    async def run(self) -> None:
        failures = 0
        while True:
            if not self._pending:
                self._idle.set()
                self._ready.clear()
                await self._ready.wait()
            batch = [
                self._pending.popleft() for _ in range(min(len(self._pending), self._batch_max))
            ]
            self._in_flight = batch
            try:
                results = await self._backend.jobs_finalize(moves=[m for m, _ in batch])
            except StorageError as exc:
                failures += 1
                self._failing = True
                self._pending.extendleft(reversed(batch))
                self._in_flight = []
                delay = min(5.0, 0.05 * 2 ** min(failures, 7)) * random.uniform(0.5, 1.0)
                log_event(
                    Event.FINALIZE_RETRYING,
                    "could not record outcomes; retrying",
                    level=40 if failures == 1 else 30,
                    error=str(exc),
                    moves=len(batch),
                    retry_in=round(delay, 3),
                )
                await asyncio.sleep(delay)
                continue
            failures = 0
            self._failing = False
            self._in_flight = []
            for (move, tag), applied in zip(batch, results, strict=True):
                self._on_result(move, tag, applied)
            if not self._pending:
                self._idle.set()
