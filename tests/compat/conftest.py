"""Shared by the Celery layer's tests: a Celery app over an App on the test's store, a fresh
registry of shared tasks and current app per test, and a burst worker to run what was sent."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chokaq import App, WorkerSettings
from chokaq.compat.celery import Celery
from chokaq.compat.celery import app as celery_app_module
from chokaq.compat.celery import results as results_module


@pytest.fixture(autouse=True)
def _fresh_registry() -> Iterator[None]:
    """Each test starts with no current app and no shared task (they are process-wide, as
    Celery's are), and leaves them as it found them."""
    shared, current = celery_app_module._shared[:], results_module.CURRENT[:]
    celery_app_module._shared[:] = []
    results_module.CURRENT[:] = []
    yield
    celery_app_module._shared[:] = shared
    results_module.CURRENT[:] = current


@pytest.fixture
def offline(tmp_path: Path) -> Celery:
    """A Celery app over an App that is never opened: for what registration decides."""
    return Celery(App(f"sqlite:///{tmp_path / 'offline.db'}"))


@pytest.fixture
def celery(store: Any) -> Iterator[Celery]:
    """A Celery app over an App on the test's store (SQLite, PostgreSQL)."""
    app = App(store.url, schema=store.schema, auto_migrate=True)
    yield Celery(app)
    app.close_sync()


def work(celery: Celery) -> None:
    """Run what was sent: a burst worker on the same store and handlers, in this thread."""

    async def run() -> None:
        worker = App(
            celery.app.url,
            schema=celery.app.schema,
            worker=WorkerSettings(poll_interval_seconds=0.05, burst_horizon_seconds=5.0),
        )
        worker.handlers = celery.app.handlers
        try:
            await worker.run_worker(burst=True)
        finally:
            await worker.close()

    asyncio.run(run())
