"""Fixtures for runtime tests: apps on the test's store with fast worker settings, and a
helper to run a worker in the background."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from chokaq import App, RetryPolicy, WorkerSettings
from chokaq.runtime.worker import Worker

FAST = dict(
    heartbeat_min_seconds=0.1,
    heartbeat_max_seconds=0.2,
    zombie_timeout_seconds=1.0,
    fetched_timeout_seconds=1.0,
    rescue_interval_seconds=0.2,
    poll_interval_seconds=0.02,
    worker_beat_interval_seconds=0.2,
    shutdown_grace_seconds=2.0,
    retry=RetryPolicy(max_attempts=3, base_delay_seconds=0.05, jitter_seconds=0),
)


async def _apps(store: Any) -> AsyncIterator[Callable[..., App]]:
    apps: list[App] = []

    def factory(*, job_defaults: Any = None, **settings: Any) -> App:
        app = App(
            store.url,
            schema=store.schema,
            auto_migrate=True,
            worker=WorkerSettings(**{**FAST, **settings}),
            job_defaults=job_defaults,
        )
        apps.append(app)
        return app

    yield factory
    for app in apps:
        await app.close()


@pytest.fixture
async def make_app(store: Any) -> AsyncIterator[Callable[..., App]]:
    """``make_app(job_defaults=None, **worker_settings)``: an App on this test's store, migrated
    on open."""
    async for factory in _apps(store):
        yield factory


@pytest.fixture
async def pg_app(pg_store: Any) -> AsyncIterator[Callable[..., App]]:
    """``make_app`` on this test's PostgreSQL schema, for tests that need PostgreSQL itself."""
    async for factory in _apps(pg_store):
        yield factory


@contextlib.asynccontextmanager
async def running(app: App, **overrides: Any) -> AsyncIterator[Worker]:
    """Run a worker of ``app`` in the background for the block, then stop it gracefully."""
    worker = app.create_worker(**overrides)
    task = asyncio.create_task(worker.run())
    try:
        yield worker
    finally:
        worker.stop()
        await asyncio.wait_for(task, timeout=30)


async def until(condition: Callable[[], Awaitable[bool]], timeout: float = 15.0) -> None:
    """Poll ``condition`` until true or fail after ``timeout`` seconds (no fixed sleeps)."""
    deadline = time.monotonic() + timeout
    while not await condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout} s")
        await asyncio.sleep(0.02)


def knows_queue(worker: Worker, name: str) -> bool:
    """Whether ``worker`` has read queue ``name``'s settings (its first registry beat)."""
    registry = getattr(worker, "registry", None)  # set once run() has opened the app
    return registry is not None and name in registry.queues
