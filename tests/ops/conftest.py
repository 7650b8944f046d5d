"""Helpers for the operations tests: seeding a store through a real worker, running CLI
commands against it, and waiting for conditions with a deadline."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import pytest
from click.testing import CliRunner, Result

from chokaq import App
from chokaq.cli import main
from chokaq.storage import create_backend

from .ops_app import build


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def until(
    condition: Callable[[], Awaitable[Any]], *, timeout: float = 20.0, every: float = 0.05
) -> Any:
    """Poll ``condition`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = await condition()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"condition not met within {timeout} s")
        await asyncio.sleep(every)


def on_store(store: Any, fn: Any) -> Any:
    """Run ``fn(backend)`` on a backend of ``store`` opened for the call (what a CLI command
    left behind, read from outside it)."""

    async def run() -> Any:
        backend = create_backend(store.url, schema=store.schema)
        await backend.open()
        try:
            return await fn(backend)
        finally:
            await backend.close()

    return asyncio.run(run())


def poll(condition: Callable[[], Any], *, timeout: float = 20.0, every: float = 0.1) -> Any:
    """``until`` for synchronous code."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"condition not met within {timeout} s")
        time.sleep(every)


async def seed(store: Any, *, ok: int = 3, poison: int = 2, flaky: int = 1, slow: int = 0) -> App:
    """Enqueue a known mix and run a burst worker until it is all finished; returns the
    (closed) App. Leaves ``ok`` archived, ``poison`` FATAL_ERROR, ``flaky`` TRANSIENT and
    ``slow`` TIMEOUT rows in the DLQ."""
    app = build(store.url, store.schema)
    h = app.handlers
    jobs = [h["ok"].prepare(n=i) for i in range(ok)]
    jobs += [h["poison"].prepare(n=i) for i in range(poison)]
    jobs += [h["flaky"].prepare(n=i) for i in range(flaky)]
    jobs += [h["slow"].prepare(n=i) for i in range(slow)]
    await app.enqueue_many(jobs)
    await app.open()

    async def drained() -> bool:
        # Burst mode stops when nothing is due; a retry waiting for its backoff is not due yet.
        await app.create_worker(burst=True).run()
        summary = await app.backend.stats_summary()
        return summary.pending + summary.fetched + summary.processing == 0

    await until(drained, timeout=30)
    await app.close()
    return app


class Cli:
    """Runs ``chokaq ...`` in-process against one store."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.runner = CliRunner(env={"COLUMNS": "250", "NO_COLOR": "1"})

    def __call__(
        self, *args: str, input: str | None = None, expect: int | None = 0, store: bool = True
    ) -> Result:
        argv: Sequence[str] = list(args)
        if store:
            argv = [*argv, "--database", self.store.url, "--schema", self.store.schema]
        result = self.runner.invoke(main, argv, input=input, catch_exceptions=False)
        if expect is not None:
            assert result.exit_code == expect, (result.exit_code, result.output)
        return result


@pytest.fixture
def cli(store: Any) -> Cli:
    return Cli(store)
