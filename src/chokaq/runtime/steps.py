"""Reads and records durable jobs' steps in batches: one statement per loop turn for the step
reads of every job that started a run meanwhile, and one for the step outcomes they reached.

The finalizer's shape (``runtime/finalizer.py``): callers queue a request and wait on its
future; the loop takes what is queued (at most ``batch_max`` of each kind) into one statement
and hands each caller its own answer. Nothing waits on a timer: while idle the loop sleeps on an
event, and a request waits only for the statement in flight, if any, so a lone job pays one
round trip as before and a busy worker pays one for many jobs. Each write is still fenced by its
own lease in the statement (``steps_record_many``): a stale run's record is refused alone. A
storage error reaches every caller of that statement, as the single call's would have; no retry
here (the step raises into the handler and the job's retry policy applies, as before). Owns the
queues of pending requests; decides nothing.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from ..errors import StorageError
from ..models import StepRecord, StepWrite
from ..storage import Backend

__all__ = ["StepBatcher"]

T = TypeVar("T")
R = TypeVar("R")


class StepBatcher:
    """Coalesces the step reads and writes of a worker's concurrent durable runs."""

    def __init__(
        self,
        backend: Backend,
        batch_max: int,
        on_recorded: Callable[[int], None] | None = None,
    ) -> None:
        self._backend = backend
        self._batch_max = batch_max
        self._on_recorded = on_recorded
        self._reads: deque[tuple[str, asyncio.Future[list[StepRecord]]]] = deque()
        self._writes: deque[tuple[StepWrite, asyncio.Future[StepRecord | None]]] = deque()
        self._ready = asyncio.Event()
        self._stopped = False

    async def read(self, job_id: str) -> list[StepRecord]:
        """The steps ``job_id`` recorded (``Backend.steps_list``), read with other jobs'."""
        return await self._queue(self._reads, job_id)

    async def record(self, write: StepWrite) -> StepRecord | None:
        """Record one step outcome (``Backend.steps_record``) with other jobs': the step as
        recorded, or None when the lease no longer holds or the step was already done."""
        return await self._queue(self._writes, write)

    async def _queue(self, pending: deque[tuple[T, asyncio.Future[R]]], item: T) -> R:
        if self._stopped:
            raise _stopped()
        future: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        pending.append((item, future))
        self._ready.set()
        return await future

    async def run(self) -> None:
        try:
            while True:
                if not self._reads and not self._writes:
                    self._ready.clear()
                    await self._ready.wait()
                await self._turn()
        finally:
            # Stopped (worker shutdown): no caller may wait for a statement that never comes.
            self._stopped = True
            stopped = _stopped()
            futures: list[asyncio.Future[Any]] = [f for _, f in self._reads]
            futures += [f for _, f in self._writes]
            for future in futures:
                if not future.done():
                    future.set_exception(stopped)

    async def _turn(self) -> None:
        """One statement for the queued reads, then one for the queued writes."""
        reads = _take(self._reads, self._batch_max, str)
        if reads:
            await _answer(reads, self._list_many)
        writes = _take(self._writes, self._batch_max, lambda w: (w.lease.job_id, w.name))
        if writes:
            await _answer(writes, self._record_many)

    async def _list_many(self, job_ids: list[str]) -> list[list[StepRecord]]:
        found = await self._backend.steps_list_many(job_ids=job_ids)
        return [found[job_id] for job_id in job_ids]

    async def _record_many(self, writes: list[StepWrite]) -> list[StepRecord | None]:
        done = await self._backend.steps_record_many(records=writes)
        if self._on_recorded is not None:
            self._on_recorded(sum(step is not None for step in done))
        return done


def _stopped() -> StorageError:
    return StorageError("the worker stopped before this step was read or recorded")


def _take(
    pending: deque[tuple[T, asyncio.Future[R]]], limit: int, key: Callable[[T], Any]
) -> list[tuple[T, asyncio.Future[R]]]:
    """Up to ``limit`` queued requests, in order; one whose ``key`` repeats one taken (a read of
    the same job, the same step of a job) waits for the next turn, since one statement takes
    each key once. Requests whose caller gave up (cancelled) are dropped."""
    taken: list[tuple[T, asyncio.Future[R]]] = []
    later: list[tuple[T, asyncio.Future[R]]] = []
    keys: set[Any] = set()
    while pending and len(taken) < limit:
        item, future = pending.popleft()
        if future.done():
            continue
        k = key(item)
        (later if k in keys else taken).append((item, future))
        keys.add(k)
    pending.extendleft(reversed(later))
    return taken


async def _answer(
    batch: Sequence[tuple[T, asyncio.Future[R]]],
    statement: Callable[[list[T]], Awaitable[Sequence[R]]],
) -> None:
    """Run ``statement`` for the batch and hand each caller its own answer, or the error."""
    try:
        results = await statement([item for item, _ in batch])
    except BaseException as exc:
        # A cancelled loop (worker shutdown) must not leave this batch's callers waiting.
        error = exc if isinstance(exc, Exception) else _stopped()
        for _, future in batch:
            if not future.done():
                future.set_exception(error)
        if error is not exc:
            raise
        return
    for (_, future), result in zip(batch, results, strict=True):
        if not future.done():
            future.set_result(result)
