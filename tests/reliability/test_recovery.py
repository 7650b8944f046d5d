"""A worker that saw storage trouble only in its registry loop (its fetch loop never failed)
still reports the recovery: event 1007, and its health check back to healthy.

Found by the torture run: after the PostgreSQL restart one worker's registry loop failed once
more after its fetch loop had recovered; it never logged 1007 again, kept reporting "storage
unavailable" in its health check, and would not have logged the next outage (1006).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from tests.runtime.conftest import FAST, running, until

from chokaq import App, StorageError, WorkerSettings
from chokaq.health import Status, check_worker


@pytest.fixture
async def app(tmp_path: Path) -> AsyncIterator[App]:
    chokaq_app = App(f"sqlite:///{tmp_path / 'jobs.db'}", worker=WorkerSettings(**FAST))
    await chokaq_app.open()
    yield chokaq_app
    await chokaq_app.close()


async def test_registry_loop_reports_the_recovery(
    app: App, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="chokaq")
    async with running(app) as worker:
        await until(lambda: _true(worker.state == "running"))
        # What the registry loop does when a beat fails while the fetch loop is idle.
        worker.outage.trouble(StorageError("simulated: connection lost"))
        assert check_worker(worker).status is Status.DEGRADED

        async def recovered() -> bool:
            return worker.outage.down_since is None

        await until(recovered, timeout=5)
        assert check_worker(worker).status is Status.HEALTHY
    ids = [getattr(r, "chokaq", {}).get("event_id") for r in caplog.records]
    assert 1006 in ids and 1007 in ids
    assert ids.index(1007) > ids.index(1006)


async def _true(value: bool) -> bool:
    return value
