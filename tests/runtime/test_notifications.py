"""Wake-ups and cancel notifications under faults: any queue name, and a lost LISTEN connection.

A queue named like a cancel request (``cancel:x``) must wake its idle workers on both backends.
On PostgreSQL, a LISTEN connection killed with ``pg_terminate_backend`` is replaced within
seconds (a new backend listens), after which a NOTIFY wakes an idle worker again and a cancel
request from another backend reaches the running job through the notification (heartbeats are
made too slow here to carry it).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import psycopg
import pytest
from tests.ops.test_events import captured

from chokaq import JobContext
from chokaq.logs import Event
from chokaq.models import Pillar

from .conftest import running, until


async def test_a_queue_named_like_a_cancel_request_wakes_its_idle_worker(make_app: Any) -> None:
    app = make_app(poll_interval_seconds=30)  # only a wake-up can start the job in time
    ran = asyncio.Event()

    @app.job(queue="cancel:x")
    async def ping() -> None:
        ran.set()

    await app.open()
    async with running(app, queues=["cancel:x"]) as worker:
        await until(lambda: _listening(worker))
        await until(lambda: _idle(worker))
        await ping.enqueue()
        await asyncio.wait_for(ran.wait(), timeout=5)


async def _listening(worker: Any) -> bool:
    return worker.state == "running"


async def _idle(worker: Any) -> bool:
    # The fetch loop has made its first claim and is waiting for a wake-up.
    return worker.last_fetch_at is not None and not worker._wake.is_set()


def _listen_backends(url: str, schema: str) -> list[int]:
    channel = f"chokaq_{schema.lower()}"
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE query LIKE 'LISTEN %%' "
            "AND query LIKE %s AND pid <> pg_backend_pid()",
            (f"%{channel}%",),
        ).fetchall()
    return [row[0] for row in rows]


@pytest.mark.postgres
async def test_listen_is_re_established_after_its_backend_is_terminated(
    pg_store: Any, pg_app: Any
) -> None:
    # Heartbeats far apart: only the notification can deliver the cancel request in time.
    app = pg_app(
        poll_interval_seconds=30,
        heartbeat_min_seconds=20,
        heartbeat_max_seconds=25,
        zombie_timeout_seconds=60,
    )
    started: list[float] = []
    cancelled = asyncio.Event()

    @app.job()
    async def ping() -> None:
        started.append(time.monotonic())

    @app.job()
    async def long(ctx: JobContext) -> None:
        started.append(time.monotonic())
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            if ctx.cancel_requested:
                cancelled.set()
            raise

    await app.open()
    other = pg_store.backend()
    await other.open()
    try:
        with captured() as lines:
            async with running(app) as worker:
                await until(lambda: _idle(worker))
                (old,) = _listen_backends(pg_store.url, pg_store.schema)
                with psycopg.connect(pg_store.url, autocommit=True) as conn:
                    conn.execute("SELECT pg_terminate_backend(%s)", (old,))

                async def relistened() -> bool:
                    return bool(set(_listen_backends(pg_store.url, pg_store.schema)) - {old})

                await until(relistened, timeout=10)
                await until(lambda: _idle(worker))
                # A NOTIFY wakes the idle worker again, long before its 30 s poll.
                sent = time.monotonic()
                await ping.enqueue()
                await until(lambda: _started(started, 1), timeout=5)
                assert started[0] - sent < 2.0
                # A cancel request from another backend reaches the running job.
                job_id = await long.enqueue()
                await until(lambda: _started(started, 2), timeout=5)
                result = await other.jobs_cancel(ids=[job_id], actor="ops")
                assert result.requested == (job_id,)
                await asyncio.wait_for(cancelled.wait(), timeout=5)

                async def buried() -> bool:
                    view = await app.backend.job_get(job_id)
                    return view is not None and view.pillar is Pillar.DLQ

                await until(buried, timeout=10)
        lost = [line for line in lines if line["event_id"] == Event.NOTIFY_LISTEN_LOST]
        back = [line for line in lines if line["event_id"] == Event.NOTIFY_LISTEN_RESTORED]
        assert len(lost) == 1 and "terminat" in lost[0]["error"]
        assert len(back) == 1 and back[0]["attempts"] >= 1 and back[0]["down_seconds"] < 10
    finally:
        await other.close()


async def _started(started: list[float], count: int) -> bool:
    return len(started) >= count


def test_payloads_are_tagged_so_no_queue_name_reads_as_a_cancel() -> None:
    from chokaq.storage.postgres.notify import parse_payload

    assert parse_payload("j:cancel:x") == ("jobs", "cancel:x")
    assert parse_payload("j:") == ("jobs", "")
    assert parse_payload("c:0190a1b2-0000-7000-8000-000000000000") == (
        "cancel",
        "0190a1b2-0000-7000-8000-000000000000",
    )
    # A payload of another version (untagged) wakes the fetchers for "some queue".
    assert parse_payload("cancel:x") == ("jobs", "")
    assert parse_payload("emails") == ("jobs", "")


@pytest.mark.postgres
async def test_a_notifier_that_cannot_listen_at_start_keeps_trying(pg_app: Any) -> None:
    # The first LISTEN connection is refused for real (a closed port); start says so, and the
    # notifier goes on trying in the background until it listens, then delivers.
    from chokaq.storage.postgres.notify import PgNotifier

    app = pg_app()

    @app.job()
    async def ping() -> None:
        pass

    await app.open()
    driver: Any = app.backend.driver
    tries = 0

    async def connect() -> psycopg.AsyncConnection[Any]:
        nonlocal tries
        tries += 1
        if tries == 1:
            return await psycopg.AsyncConnection.connect(
                "postgresql://postgres@127.0.0.1:1/test", connect_timeout=5
            )
        conn: psycopg.AsyncConnection[Any] = await driver._connect()
        return conn

    notifier = PgNotifier(connect, driver._q["listen"])
    woken: list[str] = []
    with captured() as lines:
        with pytest.raises(psycopg.OperationalError):
            await notifier.start(woken.append, lambda job_id: None)
        assert not notifier.healthy
        try:
            await until(lambda: _true(notifier.healthy))
            assert tries >= 2
            await ping.enqueue()
            await until(lambda: _true("default" in woken))
        finally:
            await notifier.stop()
    ids = [line["event_id"] for line in lines]
    assert Event.NOTIFY_LISTEN_LOST in ids and Event.NOTIFY_LISTEN_RESTORED in ids


async def _true(value: bool) -> bool:
    return value
