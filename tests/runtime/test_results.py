"""Return values and waiting on them, on both backends: ``app.result`` is woken by the
notifier as the job leaves the hot table (the poll fallback is set to an hour here, so only a
notification can wake it, from this process or another one), raises for a job in the DLQ, a
result not kept and a timeout, and handlers read their parents' results.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.runtime.conftest import running

from chokaq import (
    App,
    FailureReason,
    JobBlockedError,
    JobContext,
    JobFailedError,
    Limits,
    NotFoundError,
    Pillar,
    ResultUnavailableError,
    ValidationError,
)
from chokaq import results as results_module

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def no_poll(monkeypatch: pytest.MonkeyPatch) -> None:
    """Waits poll once an hour: only a notification wakes them within a test."""
    monkeypatch.setattr(results_module, "POLL_SECONDS", 3600.0)
    monkeypatch.setattr(results_module, "LOST_POLL_SECONDS", 3600.0)


def register(app: App) -> dict[str, Any]:
    @app.job()
    async def double(n: int) -> int:
        return 2 * n

    @app.job()
    async def total(ctx: JobContext) -> int:
        return sum(ctx.parent_results.values())

    @app.job()
    def huge() -> str:
        return "x" * 2_000

    @app.job()
    async def opaque() -> object:
        return object()

    @app.job()
    async def broken() -> None:
        raise ValueError("no good")

    return {"double": double, "total": total, "huge": huge, "opaque": opaque, "broken": broken}


async def test_result_is_woken_by_the_notifier_and_parents_results_are_read(
    make_app: Callable[..., App], no_poll: None
) -> None:
    app = make_app()
    jobs = register(app)
    await app.open()
    await app.backend.migrate()
    async with running(app):
        first = await jobs["double"].enqueue(n=2)
        assert await app.result(first, timeout=30) == 4
        a = jobs["double"].prepare(n=3)
        b = jobs["double"].prepare(n=4)
        fan_in = jobs["total"].prepare(after=[a, b, first])
        await app.enqueue_many([fan_in, a, b])  # any order: parents are found by id
        assert await app.result(fan_in.id, timeout=30) == 6 + 8 + 4
        later = await jobs["total"].enqueue(after=[fan_in.id])
        assert await app.result(later, timeout=30) == 18


async def test_failures_timeouts_and_results_not_kept(make_app: Callable[..., App]) -> None:
    app = make_app()
    app.limits = Limits(max_result_bytes=1_000)
    jobs = register(app)
    await app.open()
    await app.backend.migrate()
    waiting = await jobs["double"].enqueue(n=1)
    with pytest.raises(TimeoutError, match=waiting):
        await app.result(waiting, timeout=0.2)
    with pytest.raises(ValidationError, match="timeout_seconds: must not be negative"):
        await app.result(waiting, timeout=-1)  # the older name of timeout_seconds
    with pytest.raises(ValidationError, match="timeout: is another name for timeout_seconds"):
        await app.result(waiting, timeout=1, timeout_seconds=1)
    with pytest.raises(TimeoutError, match=waiting):
        await app.wait(waiting, timeout_seconds=0.05)
    with pytest.raises(NotFoundError):
        await app.result("00000000-0000-0000-0000-000000000001", timeout=1)
    async with running(app):
        assert await app.result(waiting, timeout=30) == 2
        big = await jobs["huge"].enqueue()
        with pytest.raises(ResultUnavailableError, match="over the limit of"):
            await app.result(big, timeout=30)
        strange = await jobs["opaque"].enqueue()
        with pytest.raises(ResultUnavailableError, match="not JSON-serializable"):
            await app.result(strange, timeout=30)
        bad = await jobs["broken"].enqueue()
        with pytest.raises(JobFailedError) as failed:
            await app.result(bad, timeout=30)
        assert failed.value.reason is FailureReason.TRANSIENT
        assert "no good" in (failed.value.error or "")
        outcome = await app.wait(bad, timeout=1)
        assert outcome.failure_reason is FailureReason.TRANSIENT
    view = await app.get_job(big)
    assert view is not None and view.state == "succeeded" and view.result is None
    assert "over the limit" in (view.result_error or "")
    assert app._waiter is not None and app._waiter._waiting == {}  # every wait cleaned up


def test_result_sync_waits_from_code_that_cannot_await(make_app: Callable[..., App]) -> None:
    app = make_app()
    jobs = register(app)

    async def scenario() -> None:
        await app.open()
        await app.backend.migrate()
        job_id = await jobs["double"].enqueue(n=21)
        try:
            async with running(app):
                value = await asyncio.to_thread(app.result_sync, job_id, timeout=30)
            assert value == 42
        finally:
            app.close_sync()
            await app.close()

    asyncio.run(scenario())


@pytest.fixture
def worker_process(store: Any, tmp_path: Path) -> Iterator[Callable[[], subprocess.Popen[bytes]]]:
    procs: list[subprocess.Popen[bytes]] = []

    def start() -> subprocess.Popen[bytes]:
        env = {
            **os.environ,
            "CHOKAQ_DATABASE_URL": store.url,
            "CHOKAQ_SCHEMA": store.schema,
            "CHOKAQ_TEST_DIR": str(tmp_path),
            "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)]),
        }
        log = open(tmp_path / f"worker-{len(procs)}.log", "wb")  # noqa: SIM115
        proc = subprocess.Popen(
            [sys.executable, "-m", "chokaq", "worker", "--app", "tests.apps.workflows:app"],
            cwd=REPO,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        proc.kill()
        proc.wait(timeout=10)


async def test_a_waiter_in_another_process_is_woken_by_the_notifier(
    store: Any, worker_process: Callable[[], subprocess.Popen[bytes]], no_poll: None
) -> None:
    from tests.apps.workflows import fetch

    app = App(store.url, schema=store.schema, auto_migrate=True)
    app.handlers = {"fetch": fetch}
    await app.open()
    await app.backend.migrate()
    try:
        worker_process()
        for n in range(3):
            [job_id] = await app.enqueue_many([fetch.prepare(url="x" * n)])
            assert await app.result(job_id, timeout=60) == {"url": "x" * n, "size": n}
    finally:
        await app.close()


async def test_the_listener_stops_once_no_one_waits(
    make_app: Callable[..., App], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.runtime.conftest import until

    monkeypatch.setattr(results_module, "IDLE_SECONDS", 0.05)
    app = make_app()
    jobs = register(app)
    await app.open()
    await app.backend.migrate()
    async with running(app):
        assert await app.result(await jobs["double"].enqueue(n=1), timeout=30) == 2
        waiter = app._waiter
        assert waiter is not None

        async def stopped() -> bool:
            return waiter._notifier is None

        await until(stopped, timeout=10)
        assert await app.result(await jobs["double"].enqueue(n=2), timeout=30) == 4
        assert waiter._notifier is not None  # started again for the new wait


async def test_a_blocked_job_is_said_so_instead_of_waited_for(make_app: Callable[..., App]) -> None:
    # A job waiting on a parent in the DLQ never finishes on its own: app.result with no
    # timeout used to wait for ever. It says so, and names the job to repair.
    app = make_app()
    jobs = register(app)
    await app.open()
    await app.backend.migrate()
    parent = jobs["broken"].prepare()
    child = jobs["total"].prepare(after=[parent])
    grandchild = jobs["total"].prepare(after=[child])
    await app.enqueue_many([parent, child, grandchild])
    async with running(app):
        with pytest.raises(JobFailedError):
            await app.result(parent.id, timeout=30)
    for waiting in (child.id, grandchild.id):  # a grandchild waits on it through the child
        with pytest.raises(JobBlockedError) as blocked:
            await asyncio.wait_for(app.result(waiting), timeout=30)
        assert (blocked.value.job_id, blocked.value.blocked_by) == (waiting, parent.id)
        assert blocked.value.reason is FailureReason.TRANSIENT
        assert f"waits on job {parent.id}, which is in the DLQ (TRANSIENT)" in str(blocked.value)
        outcome = await app.wait(waiting)
        assert (outcome.pillar, outcome.blocked_by) == (Pillar.HOT, parent.id)
        assert outcome.blocked_reason is FailureReason.TRANSIENT
    assert app._waiter is not None and app._waiter._waiting == {}


async def test_a_wait_that_began_before_the_parent_failed_ends_blocked(
    make_app: Callable[..., App],
) -> None:
    app = make_app()
    jobs = register(app)
    await app.open()
    await app.backend.migrate()
    parent = jobs["broken"].prepare()
    child = jobs["total"].prepare(after=[parent])
    await app.enqueue_many([parent, child])
    waiter = asyncio.create_task(app.result(child.id))
    async with running(app):
        with pytest.raises(JobBlockedError, match=parent.id):
            await asyncio.wait_for(waiter, timeout=30)


def test_result_sync_says_a_job_is_blocked(make_app: Callable[..., App]) -> None:
    app = make_app()
    jobs = register(app)

    async def scenario() -> None:
        await app.open()
        await app.backend.migrate()
        parent = jobs["broken"].prepare()
        child = jobs["total"].prepare(after=[parent])
        await app.enqueue_many([parent, child])
        try:
            async with running(app):
                with pytest.raises(JobFailedError):
                    await app.result(parent.id, timeout=30)
            with pytest.raises(JobBlockedError, match=parent.id):
                await asyncio.wait_for(asyncio.to_thread(app.result_sync, child.id), timeout=30)
        finally:
            app.close_sync()
            await app.close()

    asyncio.run(scenario())
