"""Bad input met at execution time, on both backends, with a real worker: unknown job types and
payloads that do not fit land in the DLQ as Rejected with a reason; handlers that raise
BaseException subclasses, never return, swallow cancellation or block the event loop are
recorded (retried, dead-lettered or timed out) and the worker keeps running other jobs."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from tests.conftest import Store
from tests.runtime.conftest import FAST, running, until

from chokaq import App, FailureReason, RetryPolicy, WorkerSettings
from chokaq.models import JobView, Pillar


class Custom(BaseException):
    """A BaseException subclass that is not an Exception."""


@pytest.fixture
def released() -> asyncio.Event:
    """Set by a test to let ``swallows_cancel`` return (it ignores every cancellation)."""
    return asyncio.Event()


@pytest.fixture
async def app(store: Store, released: asyncio.Event) -> AsyncIterator[App]:
    # Unknown types are rejected at once here (no grace): this suite is about the rejection.
    settings = {
        **FAST,
        "retry": RetryPolicy(max_attempts=1, base_delay_seconds=0.05),
        "unknown_type_grace_seconds": 0,
    }
    chokaq_app = App(
        store.url, schema=store.schema, auto_migrate=True, worker=WorkerSettings(**settings)
    )

    @chokaq_app.job()
    async def quick(n: int) -> int:
        return n

    @chokaq_app.job()
    async def raise_async(kind: str) -> None:
        raise {"kbd": KeyboardInterrupt, "exit": SystemExit, "gen": GeneratorExit}.get(
            kind, Custom
        )(f"raised {kind}")

    @chokaq_app.job()
    def raise_sync(kind: str) -> None:
        raise {"kbd": KeyboardInterrupt, "exit": SystemExit, "gen": GeneratorExit}.get(
            kind, Custom
        )(f"raised {kind}")

    @chokaq_app.job(timeout=0.3)
    async def never_returns() -> None:
        await asyncio.Event().wait()

    @chokaq_app.job(timeout=0.3)
    def never_returns_sync() -> None:
        time.sleep(1.5)

    @chokaq_app.job(timeout=0.2)
    async def swallows_cancel() -> None:
        # Until the test has seen it abandoned (at most 30 s): its task outlives the worker's
        # stop too, and the test's event loop would wait for it at the end.
        deadline = time.monotonic() + 30
        while not released.is_set() and time.monotonic() < deadline:
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):  # on purpose
                await asyncio.wait_for(released.wait(), deadline - time.monotonic())

    @chokaq_app.job(timeout=5.0)
    async def blocks_loop(seconds: float) -> None:
        time.sleep(seconds)  # noqa: ASYNC251 (blocking the loop on purpose)

    await chokaq_app.open()
    yield chokaq_app
    await chokaq_app.close()


async def settled(app: App, job_id: str, timeout: float = 15.0) -> JobView:
    async def done() -> bool:
        view = await app.backend.job_get(job_id)
        return view is not None and view.pillar is not Pillar.HOT

    await until(done, timeout=timeout)
    view = await app.backend.job_get(job_id)
    assert view is not None
    return view


async def still_works(app: App) -> None:
    job_id = await app.handlers["quick"].enqueue(n=1)
    assert (await settled(app, job_id)).pillar is Pillar.ARCHIVE


@pytest.mark.parametrize(
    ("job_type", "payload", "reason_text"),
    [
        ("no_such_type", "{}", "unknown job type 'no_such_type'"),
        ("quick", "{}", "missing argument(s) n"),
        ("quick", '{"n": 1, "m": 2}', "unknown argument(s) m"),
        ("quick", "[1, 2]", "not a JSON object"),
        ("quick", '"<script>alert(1)</script>"', "not a JSON object"),
    ],
)
async def test_undispatchable_jobs_are_rejected_into_the_dlq_with_a_reason(
    app: App, job_type: str, payload: str, reason_text: str
) -> None:
    job_id = await app.enqueue_raw(job_type, payload)
    async with running(app):
        view = await settled(app, job_id)
        await still_works(app)
    assert view.pillar is Pillar.DLQ and view.failure_reason is FailureReason.REJECTED
    assert reason_text in (view.error or "")
    assert (await app.backend.stats_summary()).failed_total == 1


@pytest.mark.parametrize("kind", ["kbd", "exit", "gen", "custom"])
@pytest.mark.parametrize("handler", ["raise_async", "raise_sync"])
async def test_handlers_raising_base_exceptions_are_recorded_and_the_worker_survives(
    app: App, handler: str, kind: str
) -> None:
    job_id = await app.handlers[handler].enqueue(kind=kind)
    async with running(app) as worker:
        view = await settled(app, job_id)
        await still_works(app)
        assert not worker.stopping
    assert view.pillar is Pillar.DLQ and view.failure_reason is FailureReason.TRANSIENT
    assert f"raised {kind}" in (view.error or "")


@pytest.mark.parametrize("handler", ["never_returns", "never_returns_sync"])
async def test_handlers_that_never_return_time_out(app: App, handler: str) -> None:
    job_id = await app.handlers[handler].enqueue()
    async with running(app):
        view = await settled(app, job_id)
        await still_works(app)
    assert view.pillar is Pillar.DLQ and view.failure_reason is FailureReason.TIMEOUT


# The watchdog waits 10 s past the timeout, and nothing in it depends on the store: one run
# (on the embedded store) is enough.
@pytest.mark.parametrize("store", ["sqlite"], indirect=True)
async def test_a_handler_that_swallows_cancellation_is_abandoned_by_the_watchdog(
    app: App, released: asyncio.Event
) -> None:
    job_id = await app.handlers["swallows_cancel"].enqueue()
    # The zombie timeout must outlast the watchdog's 10 s of patience, as the defaults do
    # (60 s): a stopped job no longer heartbeats, so a shorter one would make it a Zombie.
    async with running(app, shutdown_grace_seconds=0.1, zombie_timeout_seconds=15.0) as worker:
        try:
            view = await settled(app, job_id, timeout=20)
            await still_works(app)
            assert job_id not in worker.running
        finally:
            released.set()
    assert view.pillar is Pillar.DLQ and view.failure_reason is FailureReason.TIMEOUT
    assert "did not stop when cancelled" in (view.error or "")


async def test_a_handler_blocking_the_event_loop_delays_but_loses_nothing(app: App) -> None:
    # Blocks shorter than the zombie timeout (1 s): heartbeats resume, the job succeeds, and
    # jobs enqueued meanwhile run afterwards.
    blocker = await app.handlers["blocks_loop"].enqueue(seconds=0.6)
    others = [await app.handlers["quick"].enqueue(n=i) for i in range(5)]
    async with running(app):
        views: list[Any] = [await settled(app, j) for j in [blocker, *others]]
    assert all(v.pillar is Pillar.ARCHIVE for v in views)
    summary = await app.backend.stats_summary()
    assert summary.succeeded_total == 6 and summary.failed_total == 0
