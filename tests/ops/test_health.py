"""Health checks in-process: an idle worker stays live, paused queues do not count toward lag,
thresholds and schema version decide the verdict."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from chokaq import App, ConfigurationError
from chokaq.health import (
    HealthSettings,
    Status,
    WorkerBeat,
    check_queue_lag,
    check_storage,
    check_worker,
    liveness,
    readiness,
)
from chokaq.models import NewJob

from .conftest import until
from .ops_app import build


async def test_an_idle_worker_stays_healthy(store: Any) -> None:
    app = build(store.url, store.schema)
    worker = app.create_worker(poll_interval_seconds=5.0, worker_beat_interval_seconds=0.2)
    beat = WorkerBeat(app.backend)
    settings = HealthSettings(worker_heartbeat_timeout_seconds=1.0)
    task = asyncio.create_task(worker.run())
    try:
        await until(lambda: _live(worker, beat, settings))
        # Idle for three heartbeat timeouts (no job, fetch polls only every 5 s): the registry
        # beat keeps it live the whole time (the reference's idle worker went stale).
        started = time.monotonic()
        while time.monotonic() - started < 3.0:
            report = await liveness(worker, beat, settings)
            assert report.status is Status.HEALTHY, report.as_json()
            await asyncio.sleep(0.1)
    finally:
        worker.stop()
        await asyncio.wait_for(task, timeout=30)
    stopped = check_worker(worker, beat, settings)
    assert stopped.status is Status.UNHEALTHY and stopped.details["state"] == "stopped"
    await app.close()


async def _live(worker: Any, beat: WorkerBeat, settings: HealthSettings) -> bool:
    return (await liveness(worker, beat, settings)).status is Status.HEALTHY


def test_a_stale_heartbeat_is_unhealthy() -> None:
    app = App("sqlite:///unused.db")
    worker = app.create_worker()
    worker.state = "running"
    worker.last_fetch_at = 100.0
    settings = HealthSettings(worker_heartbeat_timeout_seconds=30)
    assert check_worker(worker, None, settings, now=120.0).status is Status.HEALTHY
    stale = check_worker(worker, None, settings, now=131.0)
    assert stale.status is Status.UNHEALTHY and stale.details["heartbeat_age_seconds"] == 31.0
    worker.last_fetch_at = None
    assert check_worker(worker, None, settings, now=131.0).status is Status.UNHEALTHY


async def test_queue_lag_thresholds_exclude_paused_queues(store: Any) -> None:
    app = App(store.url, schema=store.schema, auto_migrate=True)
    await app.open()
    try:
        assert (await check_queue_lag(app)).status is Status.HEALTHY
        backend = app.backend
        # Nobody works these queues: a job due 7 s ago on "slowish", one due 60 s ago on "stuck".
        now = datetime.now(UTC)
        await backend.jobs_enqueue(
            [NewJob(type="x", queue="slowish")], now=now - timedelta(seconds=7)
        )
        await backend.jobs_enqueue(
            [NewJob(type="x", queue="stuck")], now=now - timedelta(seconds=60)
        )
        check = await check_queue_lag(app)
        assert check.status is Status.UNHEALTHY and check.details["worst_queue"] == "stuck"
        await backend.queue_pause(name="stuck", paused=True)
        check = await check_queue_lag(app)
        assert check.status is Status.DEGRADED, check.details
        assert check.details["worst_queue"] == "slowish"
        assert check.details["excluded_paused_or_inactive"] == 1
        await backend.queue_pause(name="slowish", paused=True)
        assert (await check_queue_lag(app)).status is Status.HEALTHY
        report = await readiness(app)
        assert report.status is Status.HEALTHY and report.http_status == 200
    finally:
        await app.close()


async def test_storage_check_reports_an_outdated_schema(store: Any) -> None:
    if store.capabilities.migrates_on_open:
        pytest.skip("this store migrates on open")
    app = App(store.url, schema=store.schema)  # PostgreSQL: no auto-migrate
    try:
        check = await check_storage(app)
        assert check.status is Status.UNHEALTHY
        assert check.details["schema_version"] == 0 and "chokaq migrate" in check.details["error"]
        report = await readiness(app)
        assert report.http_status == 503 and set(report.as_json()["checks"]) == {"storage"}
    finally:
        await app.close()


async def test_unreachable_storage_is_unhealthy(tmp_path: Any) -> None:
    app = App(f"sqlite:///{tmp_path}/no/such/dir/jobs.db")
    check = await check_storage(app)
    assert check.status is Status.UNHEALTHY and "error" in check.details
    await app.close()


def test_settings_are_validated() -> None:
    with pytest.raises(ConfigurationError, match="queue_lag_unhealthy_seconds"):
        HealthSettings(queue_lag_degraded_seconds=10, queue_lag_unhealthy_seconds=5)
    with pytest.raises(ConfigurationError):
        HealthSettings(worker_heartbeat_timeout_seconds=0)
