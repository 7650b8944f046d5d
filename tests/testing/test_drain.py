"""``run_until_idle`` on both backends: delays and retries are drained by moving the clock, not
by sleeping; order is kept; what cannot run is reported; a job that never ends is stopped."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from chokaq import App, FailureReason, JobContext, JobFailedError, RetryPolicy
from chokaq.testing import run_until_idle

SLOW_RETRY = RetryPolicy(max_attempts=3, base_delay_seconds=600, jitter_seconds=0)


async def test_retries_an_hour_apart_are_drained_without_waiting(
    make_app: Callable[..., App],
) -> None:
    app = make_app(retry=SLOW_RETRY)
    attempts: list[int] = []

    @app.job()
    async def flaky(ctx: JobContext) -> str:
        attempts.append(ctx.attempt)
        if ctx.attempt < 3:
            raise ConnectionError("smtp down")
        return "sent"

    job_id = await flaky.enqueue()
    started = time.monotonic()
    drained = await run_until_idle(app)
    assert time.monotonic() - started < 20  # 30 minutes of backoff, drained in real seconds
    assert attempts == [1, 2, 3]
    assert (drained.succeeded, drained.failed, drained.retried) == (1, 0, 2)
    assert drained.runs == 3 and drained.left == ()
    assert 1790 < drained.advanced_seconds < 1810  # the real seconds it took count too
    assert await app.result(job_id) == "sent"


async def test_retries_without_a_delay_need_no_clock(make_app: Callable[..., App]) -> None:
    app = make_app(retry=RetryPolicy(max_attempts=3, base_delay_seconds=0, jitter_seconds=0))
    attempts: list[int] = []

    @app.job()
    async def flaky(ctx: JobContext) -> None:
        attempts.append(ctx.attempt)
        if ctx.attempt < 3:
            raise ConnectionError("down")

    await flaky.enqueue()
    drained = await run_until_idle(app)
    assert attempts == [1, 2, 3]
    assert (drained.succeeded, drained.retried) == (1, 2)
    assert drained.advanced_seconds < 1


async def test_delayed_jobs_run_in_the_order_they_fall_due(make_app: Callable[..., App]) -> None:
    app = make_app()
    ran: list[str] = []

    @app.job()
    async def step(name: str) -> None:
        ran.append(name)

    await step.enqueue(name="in an hour", delay=3600)
    await step.enqueue(name="now")
    await step.enqueue(name="in a minute", delay=60)
    drained = await run_until_idle(app)
    assert ran == ["now", "in a minute", "in an hour"]
    assert drained.succeeded == 3
    assert 3590 < drained.advanced_seconds < 3610


async def test_a_retry_scheduled_meanwhile_keeps_its_place_on_the_fake_clock(
    make_app: Callable[..., App],
) -> None:
    # The first job fails at t=0 and retries 600 s later; the other is due at t=300: a true
    # clock runs the delayed job first, and so must the fake one.
    app = make_app(retry=RetryPolicy(max_attempts=2, base_delay_seconds=600, jitter_seconds=0))
    ran: list[str] = []

    @app.job()
    async def work(name: str, ctx: JobContext) -> None:
        ran.append(f"{name}#{ctx.attempt}")
        if name == "flaky" and ctx.attempt == 1:
            raise ConnectionError("down")

    await work.enqueue(name="flaky")
    await work.enqueue(name="delayed", delay=300)
    await run_until_idle(app)
    assert ran == ["flaky#1", "delayed#1", "flaky#2"]


async def test_exhausted_retries_end_in_the_dlq_and_are_counted(
    make_app: Callable[..., App],
) -> None:
    app = make_app(retry=SLOW_RETRY)

    @app.job()
    async def broken() -> None:
        raise ConnectionError("never")

    job_id = await broken.enqueue()
    drained = await run_until_idle(app)
    assert (drained.succeeded, drained.failed, drained.retried) == (0, 1, 2)
    with pytest.raises(JobFailedError):
        await app.result(job_id)


async def test_jobs_after_parents_and_jobs_enqueued_by_handlers_are_run(
    make_app: Callable[..., App],
) -> None:
    app = make_app()
    ran: list[str] = []

    @app.job()
    async def child(ctx: JobContext) -> None:
        ran.append(f"child of {sorted(ctx.parent_results.values())}")

    @app.job()
    async def parent(n: int) -> int:
        ran.append(f"parent {n}")
        if n == 2:
            await follow_up.enqueue(delay=60)
        return n

    @app.job()
    async def follow_up() -> None:
        ran.append("follow-up")

    first, second = parent.prepare(n=1), parent.prepare(n=2)
    await app.enqueue_many([first, second, child.prepare(after=[first, second])])
    drained = await run_until_idle(app)
    assert ran[:2] == ["parent 1", "parent 2"]
    assert sorted(ran[2:]) == ["child of [1, 2]", "follow-up"]
    assert drained.succeeded == 4


async def test_jobs_without_a_handler_are_left_and_paused_queues_are_not_run(
    make_app: Callable[..., App],
) -> None:
    app = make_app()

    @app.job()
    async def known() -> None: ...

    await app.open()
    await app.enqueue_raw("unknown", "{}")
    await app.backend.queue_ensure("held")
    await app.backend.queue_pause(name="held", paused=True)
    await app.enqueue_raw("known", "{}", queue="held")
    drained = await run_until_idle(app, queues=["default", "held"])
    assert drained.runs == 0
    [left] = drained.left
    assert (left.type, left.queue, left.count) == ("unknown", "default", 1)
    assert left.reason == "no_handler"
    assert (await app.backend.stats_summary()).pending == 2


async def test_jobs_held_by_a_rate_limit_are_left_as_unclaimable(
    make_app: Callable[..., App],
) -> None:
    # Rate limits count real time, which the fake clock does not move.
    app = make_app()

    @app.job(rate_limit="1/h")
    async def slow() -> None: ...

    for _ in range(3):
        await slow.enqueue(partition="tenant-1")
    drained = await run_until_idle(app)
    assert drained.succeeded == 1
    [left] = drained.left
    assert (left.type, left.count, left.reason) == ("slow", 2, "unclaimable")


async def test_a_job_that_reenqueues_itself_for_ever_is_stopped_at_max_jobs(
    make_app: Callable[..., App],
) -> None:
    app = make_app()

    @app.job()
    async def tick() -> None:
        await tick.enqueue(delay=60)

    await tick.enqueue()
    with pytest.raises(RuntimeError, match="max_jobs=5"):
        await run_until_idle(app, max_jobs=5)


async def test_run_until_idle_on_an_in_memory_app_sees_enqueue_sync_jobs() -> None:
    app = App("sqlite:///:memory:")
    ran: list[int] = []

    @app.job()
    def record(n: int) -> None:
        ran.append(n)

    async with app:
        await asyncio.to_thread(record.enqueue_sync, n=1)
        await record.enqueue(n=2, delay=30)
        drained = await run_until_idle(app)
    assert ran == [1, 2] and drained.succeeded == 2


async def test_an_expiry_moves_with_its_jobs_due_time(make_app: Callable[..., App]) -> None:
    app = make_app()
    ran: list[str] = []

    @app.job()
    async def report(name: str) -> None:
        ran.append(name)

    await app.open()
    kept = await report.options(delay_seconds=3600, expires_after_seconds=7200).enqueue(name="a")
    # Enqueued on a clock a minute back (an expiry in the past is refused at enqueue).
    past = datetime.now(UTC) - timedelta(seconds=1)
    [written] = await app.backend.jobs_enqueue(
        [report.options(expires_at=past).prepare(name="b")], now=past - timedelta(minutes=1)
    )
    late = written.id
    drained = await run_until_idle(app)
    assert ran == ["a"] and (drained.succeeded, drained.failed) == (1, 1)
    assert drained.advanced_seconds > 3500  # an hour, less what real time passed meanwhile
    assert (await app.get_job(kept)).pillar.value == "archive"  # type: ignore[union-attr]
    dead = await app.get_job(late)
    assert dead is not None and dead.failure_reason is FailureReason.EXPIRED
