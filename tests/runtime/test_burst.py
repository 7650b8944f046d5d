"""A burst worker in-process, on both backends: what it waits for, what it reports as left,
and what is not eligible (paused queues, jobs delayed by design)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import pytest

from chokaq import App, CircuitPolicy, RetryPolicy
from chokaq.logs import Event


def _events(caplog: pytest.LogCaptureFixture, event: Event) -> list[dict[str, object]]:
    return [
        r.chokaq  # type: ignore[attr-defined]
        for r in caplog.records
        if getattr(r, "chokaq", {}).get("event_id") == event
    ]


async def test_a_retry_due_past_the_horizon_is_reported_as_left(
    make_app: Callable[..., App], caplog: pytest.LogCaptureFixture
) -> None:
    app = make_app(
        burst_horizon_seconds=0.5,
        retry=RetryPolicy(max_attempts=3, base_delay_seconds=600, jitter_seconds=0),
    )

    @app.job(queue="mail")
    async def send() -> None:
        raise ConnectionError("smtp down")

    await app.open()
    await send.enqueue()
    caplog.set_level(logging.INFO, logger="chokaq")
    worker = app.create_worker(burst=True)
    await asyncio.wait_for(worker.run(), timeout=30)
    [left] = worker.burst_left
    assert (left.queue, left.type, left.count, left.reason) == ("mail", "send", 1, "waiting")
    assert left.next_due_at is not None
    [line] = _events(caplog, Event.WORKER_BURST_WORK_LEFT)
    assert line["jobs"] == 1 and line["reasons"] == "waiting"


async def test_paused_queues_and_jobs_delayed_past_the_horizon_are_not_left(
    make_app: Callable[..., App],
) -> None:
    app = make_app(burst_horizon_seconds=0.5)

    @app.job(queue="mail")
    async def send() -> None: ...

    await app.open()
    await send.enqueue(delay=3600)
    await app.backend.queue_ensure("held")
    await app.backend.queue_pause(name="held", paused=True)
    await app.enqueue_raw("send", "{}", queue="held")
    worker = app.create_worker(burst=True)
    await asyncio.wait_for(worker.run(), timeout=30)
    assert worker.burst_left == ()
    assert (await app.backend.stats_summary()).pending == 2


async def test_a_delayed_job_due_within_the_horizon_is_waited_for(
    make_app: Callable[..., App],
) -> None:
    app = make_app(burst_horizon_seconds=30)
    ran: list[str] = []

    @app.job()
    async def soon() -> None:
        ran.append("soon")

    await app.open()
    await soon.enqueue(delay=1)
    worker = app.create_worker(burst=True)
    await asyncio.wait_for(worker.run(), timeout=30)
    assert ran == ["soon"] and worker.burst_left == ()


async def test_a_circuit_that_keeps_failing_its_probes_does_not_keep_the_burst_running(
    make_app: Callable[..., App],
) -> None:
    # The circuit re-opens sooner than the horizon, so each failed probe used to count as the
    # progress that restarts the horizon: the burst dead-lettered one job a probe and never
    # stopped while any was left (one probe a minute with the defaults).
    app = make_app(
        burst_horizon_seconds=1.0,
        circuit=CircuitPolicy(threshold=2, break_seconds=0.1),
        retry=RetryPolicy(max_attempts=1),
    )
    done: list[int] = []

    @app.job()
    async def fine(n: int) -> None:
        done.append(n)

    @app.job()
    async def down(n: int) -> None:
        raise ConnectionError("the dependency is down")

    await app.open()
    for n in range(200):
        await down.enqueue(n=n)
    for n in range(10):
        await fine.enqueue(n=n)
    worker = app.create_worker(burst=True, concurrency=2)
    await asyncio.wait_for(worker.run(), timeout=60)
    assert sorted(done) == list(range(10))
    [left] = worker.burst_left
    assert (left.type, left.reason) == ("down", "circuit_open")
    summary = await app.backend.stats_summary()
    # Probes ran within the horizon (about one per break), not one per job left.
    assert summary.failed_total < 50 and left.count == 200 - summary.failed_total
