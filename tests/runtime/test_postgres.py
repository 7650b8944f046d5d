"""PostgreSQL-only runtime behaviour: enqueue inside the caller's transaction, LISTEN/NOTIFY
wake-ups, and the polling fallback when LISTEN is unavailable."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from typing import Any

import psycopg
import pytest

from chokaq.errors import StorageError, ValidationError
from chokaq.models import Pillar

from .conftest import running, until

pytestmark = pytest.mark.postgres


async def test_a_job_enqueued_in_a_rolled_back_transaction_never_exists(
    pg_app: Any, pg_store: Any
) -> None:
    app = pg_app()

    @app.job()
    async def welcome(user: int) -> None: ...

    await app.open()
    async with await psycopg.AsyncConnection.connect(pg_store.url) as conn:
        job_id = await welcome.enqueue(user=1, connection=conn)
        assert await app.backend.job_get(job_id) is None  # not visible before commit
        await conn.rollback()
    assert await app.backend.job_get(job_id) is None
    assert (await app.backend.stats_summary()).pending == 0


async def test_a_large_batch_in_the_callers_transaction_follows_that_transaction(
    pg_app: Any, pg_store: Any
) -> None:
    # Over 1,000 jobs go as several statements, all inside the caller's own transaction.
    app = pg_app()

    @app.job()
    async def welcome(user: int) -> None: ...

    await app.open()
    async with await psycopg.AsyncConnection.connect(pg_store.url) as conn:
        ids = await welcome.enqueue_many([{"user": i} for i in range(2_500)], connection=conn)
        await conn.rollback()
        assert await app.backend.job_get(ids[-1]) is None
        ids = await welcome.enqueue_many([{"user": i} for i in range(2_500)], connection=conn)
        await conn.commit()
    assert (await app.backend.stats_summary()).pending == 2_500
    assert (await app.backend.job_get(ids[-1])) is not None
    # An autocommit connection outside a transaction block commits the batch as one.
    async with await psycopg.AsyncConnection.connect(pg_store.url, autocommit=True) as conn:
        jobs = [welcome.prepare(user=i) for i in range(2_500)]
        jobs[2_400] = welcome.prepare(user=0, idempotency_key="x" * 300)  # too long
        with pytest.raises(ValidationError):
            await app.enqueue_many(jobs, connection=conn)
        bad = [*jobs[:2_400], replace(jobs[0], id=ids[0])]  # refused by the third statement
        with pytest.raises(StorageError):
            await app.enqueue_many(bad, connection=conn)
        assert (await app.backend.stats_summary()).pending == 2_500


async def test_a_job_enqueued_in_a_committed_transaction_runs_after_commit(
    pg_app: Any, pg_store: Any
) -> None:
    app = pg_app(poll_interval_seconds=30)  # only the notification can wake the worker
    ran = asyncio.Event()

    @app.job()
    async def welcome(user: int) -> None:
        ran.set()

    await app.open()
    async with running(app):
        await asyncio.sleep(0.3)  # the worker is idle and listening
        async with await psycopg.AsyncConnection.connect(pg_store.url) as conn:
            job_id = await welcome.enqueue(user=2, connection=conn)
            await conn.execute("SELECT 1")
            await asyncio.sleep(0.2)
            assert not ran.is_set()  # the notification is held until commit
            await conn.commit()
        await asyncio.wait_for(ran.wait(), timeout=5)
    assert (await app.backend.job_get(job_id)) is not None


async def test_an_idle_worker_wakes_on_notify_without_waiting_for_its_poll(pg_app: Any) -> None:
    app = pg_app(poll_interval_seconds=30)
    started: list[float] = []

    @app.job()
    async def ping() -> None:
        started.append(time.monotonic())

    await app.open()
    async with running(app):
        await asyncio.sleep(0.3)
        sent = time.monotonic()
        await ping.enqueue()

        async def picked_up() -> bool:
            return bool(started)

        await until(picked_up, timeout=5)
    assert started[0] - sent < 1.0


async def test_the_worker_polls_when_listen_fails(pg_app: Any) -> None:
    app = pg_app(poll_interval_seconds=0.05)

    @app.job()
    async def ping() -> None: ...

    await app.open()
    backend = app.backend

    class Broken:
        healthy = False

        async def start(self, *args: Any) -> None:
            raise OSError("LISTEN refused")

        async def stop(self) -> None: ...

    backend.notifier = lambda: Broken()  # type: ignore[method-assign]
    async with running(app):
        job_id = await ping.enqueue()

        async def done() -> bool:
            view = await backend.job_get(job_id)
            return view is not None and view.pillar is Pillar.ARCHIVE

        await until(done, timeout=5)
