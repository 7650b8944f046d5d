"""The worker's step batcher (``runtime/steps.py``) on a real store (both backends): each caller
gets its own job's answer from a shared statement, and a stale lease is refused alone."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from tests.storage.conformance import at, claim, enqueue

from chokaq.models import Lease, StepState, StepWrite
from chokaq.runtime.steps import StepBatcher
from chokaq.storage import Backend


@contextlib.asynccontextmanager
async def _running(batcher: StepBatcher) -> AsyncIterator[asyncio.Task[None]]:
    task = asyncio.create_task(batcher.run())
    try:
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_each_caller_gets_its_own_answer(backend: Backend) -> None:
    ids = await enqueue(backend, 3)
    a, b, c = await claim(backend, now=at(0))
    stale = Lease(c.id, c.lease.worker_id, "00000000-0000-4000-8000-000000000000")
    counted: list[int] = []
    batcher = StepBatcher(backend, 2, counted.append)
    async with _running(batcher):
        done = await asyncio.gather(
            batcher.record(StepWrite(a.lease, "one", "1")),
            batcher.record(StepWrite(b.lease, "one", error="boom")),
            batcher.record(StepWrite(stale, "one", "3")),
            batcher.record(StepWrite(a.lease, "two", "2")),
        )
        read = await asyncio.gather(*(batcher.read(job_id) for job_id in ids))
    assert [(s.job_id, s.name, s.state) for s in done if s is not None] == [
        (ids[0], "one", StepState.DONE),
        (ids[1], "one", StepState.FAILED),
        (ids[0], "two", StepState.DONE),
    ]
    assert done[2] is None
    assert [[s.name for s in steps] for steps in read] == [["one", "two"], ["one"], []]
    assert sum(counted) == 3 and len(counted) == 2  # two statements of at most two records
