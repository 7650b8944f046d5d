"""``eager(app)`` on both backends: an enqueue has run its job when it returns, with a real
context and a stored result; retries and delays run inline; failures propagate when asked."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from chokaq import (
    App,
    ConfigurationError,
    JobBlockedError,
    JobContext,
    JobFailedError,
    Pillar,
    RetryPolicy,
    ValidationError,
)
from chokaq.testing import eager


async def test_enqueue_runs_the_job_with_a_real_context_and_stores_its_result(
    make_app: Callable[..., App],
) -> None:
    app = make_app()
    contexts: list[JobContext] = []

    @app.job(queue="mail")
    async def send(to: str, ctx: JobContext) -> str:
        contexts.append(ctx)
        return f"sent to {to}"

    with eager(app):
        job_id = await send.enqueue(to="ada@example.com", tags=["welcome"])
        [ctx] = contexts  # it ran before enqueue returned
    assert (ctx.job_id, ctx.type, ctx.queue, ctx.attempt) == (job_id, "send", "mail", 1)
    assert ctx.tags == ("welcome",)
    assert await app.result(job_id) == "sent to ada@example.com"
    view = await app.get_job(job_id)
    assert view is not None and view.pillar is Pillar.ARCHIVE


async def test_retries_and_delays_run_inline_and_the_block_ends_eagerness(
    make_app: Callable[..., App],
) -> None:
    app = make_app(retry=RetryPolicy(max_attempts=3, base_delay_seconds=300, jitter_seconds=0))
    attempts: list[int] = []

    @app.job()
    def flaky(ctx: JobContext) -> None:  # a sync handler: run on the worker's threads
        attempts.append(ctx.attempt)
        if ctx.attempt < 3:
            raise ConnectionError("down")

    with eager(app):
        await flaky.enqueue(delay=3600)
        assert attempts == [1, 2, 3]
    later = await flaky.enqueue()
    assert attempts == [1, 2, 3]  # no longer eager: only written
    view = await app.get_job(later)
    assert view is not None and view.pillar is Pillar.HOT


async def test_a_failure_is_raised_with_propagate_and_kept_in_the_dlq_without(
    make_app: Callable[..., App],
) -> None:
    app = make_app(retry=RetryPolicy(max_attempts=2, base_delay_seconds=60, jitter_seconds=0))

    @app.job()
    async def broken() -> None:
        raise ValueError("bad input")

    with eager(app):
        job_id = await broken.enqueue()
    with pytest.raises(JobFailedError, match="bad input"):
        await app.result(job_id)
    with eager(app, propagate=True), pytest.raises(JobFailedError, match="bad input"):
        await broken.enqueue()


async def test_jobs_a_handler_enqueues_and_jobs_after_parents_run_in_the_same_drain(
    make_app: Callable[..., App],
) -> None:
    app = make_app()
    ran: list[str] = []

    @app.job()
    async def order(n: int) -> int:
        ran.append(f"order {n}")
        await receipt.enqueue(n=n)  # eager too: the running drain runs it
        return n

    @app.job()
    async def receipt(n: int) -> None:
        ran.append(f"receipt {n}")

    @app.job()
    async def report(ctx: JobContext) -> None:
        ran.append(f"report of {sorted(ctx.parent_results.values())}")

    with eager(app):
        parent = order.prepare(n=1)
        await app.enqueue_many([parent, report.prepare(after=[parent])])
    assert ran[0] == "order 1"
    assert sorted(ran[1:]) == ["receipt 1", "report of [1]"]


def test_enqueue_sync_is_eager_too_from_sync_code(store: Any) -> None:
    # A sync test (a Django view, a CLI): the jobs run on the sync client's loop and threads.
    app = App(store.url, schema=store.schema, auto_migrate=True)
    ran: list[int] = []

    @app.job()
    def record(n: int, ctx: JobContext) -> int:
        ran.append(ctx.attempt)
        return n

    @app.job()
    def broken() -> None:
        raise ValueError("bad input")

    try:
        with eager(app, propagate=True):
            job_id = record.enqueue_sync(n=5)
            assert ran == [1]
            assert app.result_sync(job_id) == 5
            with pytest.raises(JobFailedError, match="bad input"):
                broken.enqueue_sync()
        record.enqueue_sync(n=6)
        assert ran == [1]  # the block is over: only written
    finally:
        app.close_sync()


async def test_enqueue_sync_on_an_in_memory_app_is_eager() -> None:
    app = App("sqlite:///:memory:")
    ran: list[int] = []

    @app.job()
    def record(n: int) -> None:
        ran.append(n)

    async with app:
        with eager(app):
            await asyncio.to_thread(record.enqueue_sync, n=1)
            assert ran == [1]


async def test_an_app_cannot_be_made_eager_twice(make_app: Callable[..., App]) -> None:
    app = make_app()
    with eager(app), pytest.raises(ConfigurationError, match="already eager"), eager(app):
        pass
    assert "enqueue_many" not in vars(app) and "enqueue_many_sync" not in vars(app)


async def test_eager_refuses_what_an_enqueue_refuses_and_runs_nothing(
    make_app: Callable[..., App],
) -> None:
    # Issue 32: an empty key, a padded key and an expiry in the past, refused in test mode as
    # outside it, naming the field; a key is kept as given.
    app = make_app()
    ran: list[str] = []

    @app.job()
    async def send(to: str) -> None:
        ran.append(to)

    past = datetime.now(UTC) - timedelta(seconds=1)
    with eager(app):
        for options, field in (
            ({"idempotency_key": ""}, "idempotency_key"),
            ({"idempotency_key": " welcome "}, "idempotency_key"),
            ({"expires_at": past}, "expires_at"),
        ):
            with pytest.raises(ValidationError) as info:
                await send.options(**options).enqueue(to="a")
            assert info.value.field == field
            with pytest.raises(ValidationError) as info:
                await send.options(**options).enqueue_many([{"to": "b"}])
            assert info.value.field == field  # one call: named as a single job is
            with pytest.raises(ValidationError) as info:
                await app.enqueue_many(
                    [send.prepare(to="c"), send.options(**options).prepare(to="d")]
                )
            assert info.value.field == f"jobs[1].{field}"
        assert ran == []
        await send.options(idempotency_key="welcome a").enqueue(to="a")
    assert ran == ["a"]
    held = await send.options(idempotency_key="welcome a").enqueue(to="z")  # written only
    view = await app.get_job(held)
    assert view is not None and view.idempotency_key == "welcome a"  # as given


async def test_the_result_of_a_job_blocked_by_a_failed_parent_is_said_so(
    make_app: Callable[..., App],
) -> None:
    app = make_app(retry=RetryPolicy(max_attempts=1))

    @app.job()
    async def broken() -> None:
        raise ValueError("bad input")

    @app.job()
    async def after_it() -> None: ...

    with eager(app):
        parent = broken.prepare()
        child = after_it.prepare(after=[parent])
        await app.enqueue_many([parent, child])
    with pytest.raises(JobBlockedError) as blocked:
        await asyncio.wait_for(app.result(child.id), timeout=30)
    assert blocked.value.blocked_by == parent.id


async def test_a_callback_on_any_outcome_and_passed_results_run_eagerly(
    make_app: Callable[..., App],
) -> None:
    app = make_app()
    seen: list[Any] = []

    @app.job(max_attempts=1)
    async def member(n: int) -> int:
        if n < 0:
            raise ValueError(f"bad {n}")
        return n

    @app.job()
    async def callback(ctx: JobContext) -> None:
        seen.append({p: (o.pillar, o.result) for p, o in ctx.parent_outcomes.items()})

    @app.job()
    async def double(value: int, label: str) -> str:
        return f"{label}={value * 2}"

    with eager(app):
        good, bad = member.prepare(n=2), member.prepare(n=-1)
        after = callback.options(after=[good, bad], after_outcome="any").prepare()
        chained = double.options(after=[good], pass_results=True).prepare(label="x")
        await app.enqueue_many([good, bad, after, chained])
    assert seen == [{good.id: (Pillar.ARCHIVE, "2"), bad.id: (Pillar.DLQ, None)}]
    assert await app.result(chained.id) == "x=4"
