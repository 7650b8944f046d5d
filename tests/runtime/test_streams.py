"""Streams on an in-process worker (both backends): ``ctx.emit`` from async and plain ``def``
handlers, ``App.stream`` yielding the items in order as they come (woken by the notifier) and
ending with the job, ``from_index``, the sync twin, a durable replay that does not repeat its
items, a plain retry that appends, and bad input refused naming the field, nothing written."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from tests.runtime.conftest import running, until

from chokaq import App, JobContext
from chokaq import results as results_module
from chokaq.errors import NotFoundError, ValidationError
from chokaq.limits import MAX_STREAM_ITEM_BYTES
from chokaq.models import Pillar


async def _finished(app: App, job_id: str) -> bool:
    view = await app.backend.job_get(job_id)
    return view is not None and view.pillar is not Pillar.HOT


async def _all(app: App, job_id: str, **options: Any) -> list[Any]:
    return [item async for item in app.stream(job_id, **options)]


async def test_a_stream_opened_before_the_job_emits_gets_each_item_by_notification(
    make_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # With the fallback poll an hour long, only the notifier can wake the reader: each item,
    # and the job's end, must arrive through it.
    monkeypatch.setattr(results_module, "POLL_SECONDS", 3600.0)
    app = make_app()
    gate = asyncio.Event()

    @app.job()
    async def count(ctx: JobContext, upto: int) -> str:
        await ctx.emit({"n": 0})
        await gate.wait()  # the reader has the first item: the rest come while it waits
        for n in range(1, upto):
            await ctx.emit({"n": n})
        return "done"

    job_id = await count.enqueue(upto=4)
    got: list[Any] = []

    async def read() -> None:
        async for item in app.stream(job_id):
            got.append(item)
            gate.set()

    reader = asyncio.create_task(read())
    await until(lambda: _watching(app, job_id))
    async with running(app):
        await asyncio.wait_for(reader, 30)
    assert got == [{"n": 0}, {"n": 1}, {"n": 2}, {"n": 3}]
    assert await app.result(job_id, timeout_seconds=5) == "done"


async def _watching(app: App, job_id: str) -> bool:
    waiter = app._waiter
    return (
        waiter is not None
        and job_id in waiter._waiting
        and waiter._notifier is not None
        and waiter._notifier.healthy
    )


async def test_a_plain_def_handler_emits_and_the_sync_twin_reads(make_app: Any) -> None:
    app = make_app()

    @app.job()
    def report(ctx: JobContext, names: list[str]) -> int:
        for name in names:
            ctx.emit({"name": name})
        return len(names)

    job_id = await report.enqueue(names=["a", "b", "c"])
    async with running(app):
        await until(lambda: _finished(app, job_id))
    assert await _all(app, job_id) == [{"name": "a"}, {"name": "b"}, {"name": "c"}]
    # An ended job's stream yields its items and ends; from_index skips the first ones.
    assert await _all(app, job_id, from_index=2) == [{"name": "c"}]
    assert await _all(app, job_id, from_index=9) == []
    try:
        items = await asyncio.to_thread(lambda: list(app.stream_sync(job_id, from_index=1)))
    finally:
        await asyncio.to_thread(app.close_sync)
    assert items == [{"name": "b"}, {"name": "c"}]


async def test_a_durable_replay_does_not_repeat_its_items(make_app: Any) -> None:
    app = make_app()

    @app.job(durable=True)
    async def staged(ctx: JobContext) -> str:
        await ctx.emit("started")
        await ctx.sleep(0.2)  # suspends; the job runs again from the top
        await ctx.emit("woke")
        return "ok"

    job_id = await staged.enqueue()
    async with running(app):
        await until(lambda: _finished(app, job_id))
    assert await app.result(job_id, timeout_seconds=5) == "ok"
    assert await _all(app, job_id) == ["started", "woke"]


async def test_a_plain_retry_appends_after_the_failed_attempt(make_app: Any) -> None:
    app = make_app()

    @app.job(max_attempts=2)
    async def flaky(ctx: JobContext) -> None:
        await ctx.emit(f"attempt {ctx.attempt}")
        if ctx.attempt == 1:
            raise ConnectionError("reset by peer")

    job_id = await flaky.enqueue()
    async with running(app):
        await until(lambda: _finished(app, job_id))
    assert await _all(app, job_id) == ["attempt 1", "attempt 2"]


async def test_bad_items_are_refused_naming_the_field_and_nothing_is_written(
    make_app: Any,
) -> None:
    app = make_app()

    @app.job(max_attempts=1)
    async def bad(ctx: JobContext) -> list[str]:
        refused = []
        for item in ({1, 2}, "x" * MAX_STREAM_ITEM_BYTES, float("nan")):
            try:
                await ctx.emit(item)
            except ValidationError as exc:
                refused.append(f"{exc.field}: {exc}")
        await ctx.emit("fine")
        return refused

    job_id = await bad.enqueue()
    async with running(app):
        await until(lambda: _finished(app, job_id))
    refused = await app.result(job_id, timeout_seconds=5)
    assert len(refused) == 3 and all(r.startswith("item: ") for r in refused)
    assert "JSON" in refused[0] and str(MAX_STREAM_ITEM_BYTES) in refused[1]
    assert await _all(app, job_id) == ["fine"]  # the good item is item 0: nothing else written


async def test_bad_reads_are_refused_at_once(make_app: Any) -> None:
    app = make_app()
    with pytest.raises(ValidationError) as caught:
        app.stream("not-an-id")
    assert caught.value.field == "job_id"
    with pytest.raises(ValidationError) as caught:
        app.stream("00000000-0000-4000-8000-000000000001", from_index=-1)
    assert caught.value.field == "from_index"
    with pytest.raises(NotFoundError):
        await _all(app, "00000000-0000-4000-8000-000000000001")


async def test_the_leaders_tidy_pass_removes_a_purged_jobs_items(make_app: Any) -> None:
    app = make_app(retention_interval_seconds=0.1)

    @app.job(max_attempts=1)
    async def doomed(ctx: JobContext) -> None:
        await ctx.emit("last words")
        raise ValueError("boom")

    job_id = await doomed.enqueue()
    async with running(app):
        await until(lambda: _finished(app, job_id))
        assert await _all(app, job_id) == ["last words"]  # kept with the job in the DLQ
        assert await app.backend.dlq_purge(ids=[job_id], actor="ops") == [job_id]

        async def tidied() -> bool:
            return await app.backend.streams_length(job_id=job_id) == 0

        await until(tidied, timeout=30)
