"""Execution faults seen outside testing, on both backends: a handler that would start after
its worker can no longer prove its claim, and sync handlers that run past their timeout."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from chokaq import App, FailureReason, JobContext, Pillar

from .conftest import running, until


async def _in(app: App, job_id: str, pillar: Pillar) -> bool:
    view = await app.backend.job_get(job_id)
    return view is not None and view.pillar is pillar


async def condition(test: Callable[[], bool]) -> bool:
    return test()


@pytest.mark.parametrize("kind", ["async", "sync"])
async def test_a_buffered_job_whose_claim_proof_expired_is_not_started_once_rescued(
    make_app: Callable[..., App], kind: str
) -> None:
    # Slow heartbeats and a one-second zombie timeout on the queue: a claim is proven for
    # 0.75 s after the statement that started it. The second job waits in the prefetch buffer
    # while the first holds the only slot; once started, a middleware holds it (a starved
    # worker, as far as the handler can tell) while another process's rescue dead-letters its
    # row as a zombie. When the middleware lets go, past the proof, the worker checks the
    # claim with storage, finds it gone and does not call the handler.
    app = make_app(
        concurrency=1,
        prefetch=1,
        heartbeat_min_seconds=30,
        heartbeat_max_seconds=31,
        zombie_timeout_seconds=60,
        rescue_interval_seconds=3600,
    )
    gate = asyncio.Event()
    held = asyncio.Event()
    release = asyncio.Event()
    ran: list[str] = []

    @app.job()
    async def first() -> None:
        await gate.wait()

    if kind == "async":

        @app.job()
        async def second(ctx: JobContext) -> None:
            ran.append(ctx.job_id)

    else:

        @app.job()
        def second(ctx: JobContext) -> None:
            ran.append(ctx.job_id)

    @app.middleware
    async def hold(ctx: JobContext, call_next: Callable[[], Awaitable[Any]]) -> Any:
        if ctx.type == "second":
            held.set()
            await release.wait()
        return await call_next()

    await app.open()
    await app.backend.queue_configure(name="default", zombie_timeout_seconds=1.0)
    first_id = str(await first.enqueue())
    second_id = str(await second.enqueue())
    async with running(app) as worker:
        await until(lambda: condition(lambda: any(j.id == second_id for j in worker.slots.buffer)))
        gate.set()
        await asyncio.wait_for(held.wait(), 15)
        # The statement that started the job was sent before the middleware ran: its proof
        # ends 0.75 s after that at the latest.
        proof_ends = time.monotonic() + 0.75
        await until(lambda: _in(app, first_id, Pillar.ARCHIVE))
        rescue = await app.backend.jobs_rescue(
            fetched_timeout_seconds=60,
            processing_timeout_seconds=60,
            now=datetime.now(UTC) + timedelta(seconds=120),
        )
        assert rescue.zombies == (second_id,)
        await until(lambda: condition(lambda: time.monotonic() > proof_ends))
        release.set()
        await until(lambda: condition(lambda: second_id not in worker.running))
    assert ran == []
    view = await app.backend.job_get(second_id)
    assert view is not None and view.pillar is Pillar.DLQ
    assert view.failure_reason is FailureReason.ZOMBIE
    summary = await app.backend.stats_summary()
    assert summary.succeeded_total == 1  # the first job; nothing recorded for the second
