"""Execution faults seen outside testing, on both backends: a handler that would start after
its worker can no longer prove its claim, and sync handlers that run past their timeout."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from tests.conftest import Raw
from tests.ops.test_events import captured, only

from chokaq import App, FailureReason, JobContext, Pillar
from chokaq.logs import Event

from .conftest import knows_queue, running, until


async def _in(app: App, job_id: str, pillar: Pillar) -> bool:
    view = await app.backend.job_get(job_id)
    return view is not None and view.pillar is pillar


async def condition(test: Callable[[], bool]) -> bool:
    return test()


@pytest.mark.parametrize("kind", ["async", "sync"])
async def test_a_buffered_job_whose_claim_proof_expired_is_not_started_once_rescued(
    make_app: Callable[..., App], raw: Raw, kind: str
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
    # The seam refuses a queue timeout under its floor (15 s); a row written before the floor
    # existed may hold one, and it is what makes the proof short enough to outlive here.
    await app.backend.queue_configure(name="default", zombie_timeout_seconds=60.0, create=True)
    raw.rows("UPDATE {queues} SET zombie_timeout_seconds = 1.0 WHERE name = 'default'")
    async with running(app) as worker:
        # The worker reads the queue's settings on its first registry beat.
        await until(lambda: condition(lambda: knows_queue(worker, "default")))
        # In one enqueue, so that one claim takes the first (higher priority) into the slot
        # and the second into the buffer.
        first_id, second_id = (
            str(i) for i in await app.enqueue_many([first.prepare(priority=20), second.prepare()])
        )
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


async def test_timed_out_sync_handlers_do_not_starve_later_sync_jobs(
    make_app: Callable[..., App],
) -> None:
    # Concurrency 2: two sync handlers that run far past their 0.5 s timeout, then two instant
    # ones with 2 s. The stuck threads cannot be interrupted; they used to hold the whole pool,
    # so the instant jobs waited for a thread until their own clock (started at the claim) ran
    # out, and both ended in the DLQ as TIMEOUT without running.
    app = make_app(concurrency=2)
    unstick = threading.Event()
    ran: list[str] = []

    @app.job(timeout=0.5)
    def stuck(n: int) -> None:
        unstick.wait(60)

    @app.job(timeout=2.0)
    def instant(n: int) -> None:
        ran.append(f"instant-{n}")

    await app.open()
    stuck_ids = [str(await stuck.enqueue(n=i)) for i in range(2)]
    try:
        async with running(app) as worker:
            for job_id in stuck_ids:
                await until(lambda job_id=job_id: _in(app, job_id, Pillar.DLQ))
            instant_ids = [str(await instant.enqueue(n=i)) for i in range(2)]
            for job_id in instant_ids:
                await until(lambda job_id=job_id: _in(app, job_id, Pillar.ARCHIVE))
            assert worker.threads.overrun == 2  # the stuck threads run on, holding no slot
            assert worker.slots.held == 0
    finally:
        unstick.set()
    assert sorted(ran) == ["instant-0", "instant-1"]
    for job_id in stuck_ids:
        view = await app.backend.job_get(job_id)
        assert view is not None and view.failure_reason is FailureReason.TIMEOUT


async def test_a_sync_timeout_counts_from_when_the_handler_starts_not_from_the_claim(
    make_app: Callable[..., App],
) -> None:
    # Two slots, one thread: the second job waits for the first's thread. Each handler works
    # 1 s of its 1.5 s timeout; the wait for a thread is not the handler's time (it used to
    # be: the second job timed out after 0.5 s of its own work).
    app = make_app(concurrency=2, sync_threads=1)

    @app.job(timeout=1.5)
    def work(n: int) -> None:
        time.sleep(1.0)  # the handler's own work, not a wait in the test

    await app.open()
    ids = [str(await work.enqueue(n=i)) for i in range(2)]
    async with running(app):
        for job_id in ids:
            await until(lambda job_id=job_id: _in(app, job_id, Pillar.ARCHIVE))


async def test_overrun_threads_past_the_bound_hold_their_slot_until_they_return(
    make_app: Callable[..., App],
) -> None:
    # One slot, one overrun thread allowed. The first stuck handler's thread runs on freely;
    # the second one's is past the bound: the worker says so (2031) and its slot stays taken,
    # so the next job waits until that thread returns.
    app = make_app(concurrency=1, sync_overrun_threads=1)
    gates = {0: threading.Event(), 1: threading.Event()}
    ran: list[str] = []

    @app.job(timeout=0.3)
    def stuck(n: int) -> None:
        gates[n].wait(60)

    @app.job()
    async def after() -> None:
        ran.append("after")

    await app.open()
    first = str(await stuck.enqueue(n=0))
    second = str(await stuck.enqueue(n=1))
    try:
        with captured() as lines:
            async with running(app) as worker:
                await until(lambda: _in(app, first, Pillar.DLQ))
                await until(lambda: _in(app, second, Pillar.DLQ))
                await until(lambda: condition(lambda: worker.slots.held == 1))
                later = str(await after.enqueue())
                limit = only(lines, Event.JOB_SYNC_OVERRUN_LIMIT)
                assert (limit["job_id"], limit["overrun_threads"], limit["limit"]) == (
                    second,
                    2,
                    1,
                )
                assert worker.slots.free == 0 and ran == []
                view = await app.backend.job_get(later)
                assert view is not None and view.pillar is Pillar.HOT  # waits for the slot
                gates[1].set()  # the held thread returns: its slot comes free
                await until(lambda: _in(app, later, Pillar.ARCHIVE))
                assert worker.slots.held == 0 and worker.threads.overrun == 1
    finally:
        for gate in gates.values():
            gate.set()
    assert ran == ["after"]
