"""Batch handlers in a worker (both backends, in process): decoration refuses bad options naming
the field; a plain ``def`` batch handler runs in a thread; a raise or a wrong number of results
fails the whole batch, each job retried under its own policy; a returned ``Retry``, ``Fail`` or
exception fails its job alone; a cancel request stops one job of a running batch and the others
succeed; the execution timeout applies to the batch; each job keeps its own result."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from chokaq import App, Batched, CircuitPolicy, Fail, ValidationError
from chokaq.models import FailureReason, Pillar

from .conftest import running, until


@dataclass
class Item:
    tenant: str
    n: int


async def _settled(app: App, ids: list[str]) -> list[Any]:
    """Wait until every job of ``ids`` left hot; their views."""

    async def gone() -> bool:
        views = [await app.backend.job_get(i) for i in ids]
        return all(v is not None and v.pillar is not Pillar.HOT for v in views)

    await until(gone, timeout=60)
    return [await app.backend.job_get(i) for i in ids]


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"batch_size": 0}, "batch_size"),
        ({"batch_size": 10_001}, "batch_size"),
        ({"batch_size": 2.5}, "batch_size"),
        ({"batch_size": 10, "batch_wait_seconds": -1}, "batch_wait_seconds"),
        ({"batch_size": 10, "batch_wait_seconds": float("nan")}, "batch_wait_seconds"),
        ({"batch_size": 10, "batch_wait_seconds": 10**9}, "batch_wait_seconds"),
        ({"batch_size": 10, "batch_key": "nope"}, "batch_key"),
        ({"batch_size": 10, "batch_key": 3}, "batch_key"),
        ({"batch_key": "tenant"}, "batch_key"),
        ({"batch_size": 10, "rate_limit": "5/s"}, "rate_limit"),
        ({"batch_size": 10, "partition_concurrency": 2}, "partition_concurrency"),
        ({"batch_size": 10, "durable": True}, "durable"),
    ],
)
def test_bad_batch_options_are_refused_at_decoration(options: dict[str, Any], field: str) -> None:
    app = App("sqlite:///unused.db")
    with pytest.raises(ValidationError) as caught:

        @app.job(**options)
        async def embed(batch: list[Batched[Item]]) -> list[int]:
            return [1] * len(batch)

    assert caught.value.field == field
    assert "embed" not in app.handlers


def test_a_batch_job_is_enqueued_with_its_models_arguments_checked() -> None:
    app = App("sqlite:///unused.db")

    @app.job(batch_size=10, batch_key="tenant")
    async def embed(batch: list[Batched[Item]]) -> list[int]:
        return [1] * len(batch)

    assert embed.prepare(tenant="t", n=1).payload == '{"tenant":"t","n":1}'
    with pytest.raises(ValidationError) as caught:
        embed.prepare(tenant="t", n="one")
    assert caught.value.field == "arguments.n"
    with pytest.raises(ValidationError):
        embed.prepare(tenant="t")  # n is required


async def test_a_def_batch_handler_runs_in_a_thread_and_each_job_keeps_its_result(
    make_app: Callable[..., App],
) -> None:
    app = make_app(concurrency=2)
    threads: set[str] = set()

    @app.job(batch_size=50, batch_wait_seconds=0.1)
    def double(batch: list[Batched[Item]]) -> list[int]:
        threads.add(threading.current_thread().name)
        return [item.args.n * 2 for item in batch]

    await app.open()
    ids = await app.enqueue_many([double.prepare(tenant="t", n=i) for i in range(120)])
    async with running(app):
        views = await _settled(app, ids)
    assert all(view.pillar is Pillar.ARCHIVE for view in views)
    assert [await app.result(i, timeout_seconds=5) for i in ids[:3]] == [0, 2, 4]
    assert threading.main_thread().name not in threads
    assert len(await app.backend.batch_sizes(type="double", since=views[0].created_at)) == 3


async def test_a_raise_or_a_wrong_count_fails_the_batch_and_each_job_retries(
    make_app: Callable[..., App],
) -> None:
    app = make_app()
    calls: list[int] = []

    @app.job(batch_size=5, batch_wait_seconds=0.05, max_attempts=2)
    async def flaky(batch: list[Batched[Item]]) -> list[int]:
        calls.append(len(batch))
        if len(calls) == 1:
            raise RuntimeError("the embedding API is down")
        return [1]  # one result for five items

    await app.open()
    ids = await app.enqueue_many([flaky.prepare(tenant="t", n=i) for i in range(5)])
    async with running(app):
        views = await _settled(app, ids)
    assert calls == [5, 5]
    for view in views:
        assert view.pillar is Pillar.DLQ and view.attempt_count == 2
        assert view.failure_reason is FailureReason.TRANSIENT
        assert "returned 1 results for 5 items" in (view.error or "")
    attempts = await app.backend.job_attempts(id=ids[0])  # newest first
    assert "the embedding API is down" in (attempts[-1].error or "")


async def test_an_item_fails_alone_by_exception_or_fail(make_app: Callable[..., App]) -> None:
    app = make_app()

    @app.job(batch_size=10, batch_wait_seconds=0.05, max_attempts=1)
    async def embed(batch: list[Batched[Item]]) -> list[Any]:
        answers: list[Any] = []
        for item in batch:
            if item.args.n == 1:
                answers.append(KeyError(f"no vector for {item.id}"))
            elif item.args.n == 2:
                answers.append(Fail("refused by policy"))
            else:
                answers.append([item.args.n])
        return answers

    await app.open()
    ids = await app.enqueue_many([embed.prepare(tenant="t", n=i) for i in range(4)])
    async with running(app):
        views = await _settled(app, ids)
    assert [v.pillar for v in views] == [Pillar.ARCHIVE, Pillar.DLQ, Pillar.DLQ, Pillar.ARCHIVE]
    assert f"KeyError: 'no vector for {ids[1]}'" in (views[1].error or "")
    assert views[2].failure_reason is FailureReason.FATAL_ERROR
    assert "refused by policy" in (views[2].error or "")
    assert await app.result(ids[3], timeout_seconds=5) == [3]


async def test_a_cancelled_job_of_a_running_batch_stops_alone(
    make_app: Callable[..., App],
) -> None:
    app = make_app()
    running_items: list[Batched[Item]] = []
    release = asyncio.Event()

    @app.job(batch_size=3, batch_wait_seconds=0.05)
    async def embed(batch: list[Batched[Item]]) -> list[int]:
        running_items.extend(batch)
        await release.wait()
        return [item.args.n for item in batch]

    await app.open()
    ids = await app.enqueue_many([embed.prepare(tenant="t", n=i) for i in range(3)])
    async with running(app):

        async def started() -> bool:
            return len(running_items) == 3

        await until(started)
        await app.cancel(ids[1], actor="ops")

        async def heard() -> bool:  # with the job's next heartbeat
            return running_items[1].context.cancel_requested

        await until(heard)
        assert not running_items[0].context.cancel_requested  # its siblings run on
        release.set()
        views = await _settled(app, ids)
    assert [v.pillar for v in views] == [Pillar.ARCHIVE, Pillar.DLQ, Pillar.ARCHIVE]
    assert views[1].failure_reason is FailureReason.CANCELLED


async def test_the_timeout_applies_to_the_batch(make_app: Callable[..., App]) -> None:
    app = make_app()

    @app.job(batch_size=3, batch_wait_seconds=0.05, timeout_seconds=0.3)
    async def slow(batch: list[Batched[Item]]) -> list[int]:
        await asyncio.sleep(60)
        return [0] * len(batch)

    await app.open()
    ids = await app.enqueue_many([slow.prepare(tenant="t", n=i) for i in range(3)])
    async with running(app):
        views = await _settled(app, ids)
    assert all(v.pillar is Pillar.DLQ for v in views)
    assert {v.failure_reason for v in views} == {FailureReason.TIMEOUT}


async def test_the_circuit_breaker_counts_a_batch_as_one_call(
    make_app: Callable[..., App],
) -> None:
    app = make_app(concurrency=1, circuit=CircuitPolicy(threshold=2, break_seconds=600))
    calls: list[int] = []

    @app.job(batch_size=5, batch_wait_seconds=0, max_attempts=10)
    async def down(batch: list[Batched[Item]]) -> list[int]:
        calls.append(len(batch))
        raise ConnectionError("the API is down")

    await app.open()
    await app.enqueue_many([down.prepare(tenant="t", n=i) for i in range(15)])
    async with running(app) as worker:

        async def opened() -> bool:
            return any(c.state.value == "open" for c in worker.circuits.snapshot())

        await until(opened)
        # Two failing calls (ten failed jobs) opened it: the batch, not its jobs, is counted.
        assert calls == [5, 5]
