"""Health checks in-process: an idle worker stays live, paused queues do not count toward lag,
thresholds and schema version decide the verdict, and a schedule more than one slot late (not
paused, not orphaned) fails readiness."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

import pytest
from tests.conftest import schedule_declaration

from chokaq import App, ConfigurationError
from chokaq.health import (
    HealthSettings,
    Status,
    WorkerBeat,
    check_queue_lag,
    check_schedules,
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


_declaration = partial(schedule_declaration, type="ok", priority=0)


T0 = datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)  # a Tuesday


async def test_a_schedule_more_than_one_slot_late_fails_the_schedules_check(store: Any) -> None:
    app = App(store.url, schema=store.schema, auto_migrate=True)
    await app.open()
    try:
        backend = app.backend
        assert (await check_schedules(app, now=T0)).status is Status.HEALTHY  # none at all
        await backend.schedules_declare([_declaration("tick")], now=T0)  # next slot T0 + 60 s

        async def at(seconds: float) -> Any:
            moment = T0 + timedelta(seconds=seconds)
            await backend.schedules_seen(["tick"], now=moment)  # a running worker declares it
            return await check_schedules(app, now=moment)

        # One slot late (its slot came due 50 s ago, nobody fired it yet): still healthy.
        check = await at(110)
        assert check.status is Status.HEALTHY, check.details
        assert check.details["worst_schedule"] == "tick"
        assert check.details["worst_lag_seconds"] == 50.0 and check.details["late"] == []
        # The slot after it came due too: nothing is firing it.
        check = await at(130)
        assert check.status is Status.UNHEALTHY
        assert check.details["late"] == ["tick"]
        assert "tick (70 s late, period 60 s)" in check.details["error"]
        # Paused: waiting is what an operator asked for.
        await backend.schedule_pause("tick", actor="ops", now=T0 + timedelta(seconds=130))
        check = await at(130)
        assert check.status is Status.HEALTHY
        assert check.details["excluded_paused_or_orphaned"] == 1
    finally:
        await app.close()


async def test_orphans_are_left_out_and_periods_follow_the_cron_expression(store: Any) -> None:
    app = App(store.url, schema=store.schema, auto_migrate=True)
    await app.open()
    try:
        backend = app.backend
        friday = datetime(2026, 12, 4, 8, 0, tzinfo=UTC)
        weekdays = _declaration("weekdays", cron="0 9 * * 1-5", every_seconds=None)
        await backend.schedules_declare([weekdays, _declaration("gone")], now=friday)

        async def at(moment: datetime) -> Any:
            await backend.schedules_seen(["weekdays"], now=moment)  # "gone" is not: an orphan
            return await check_schedules(app, now=moment)

        # Friday's 09:00 slot is due, unfired, on Sunday: the next slot is Monday, so it is
        # one slot late, not two. "gone" (declared, then never seen again) is left out.
        check = await at(datetime(2026, 12, 6, 12, 0, tzinfo=UTC))
        assert check.status is Status.HEALTHY, check.details
        assert check.details["schedules"] == 1
        assert check.details["excluded_paused_or_orphaned"] == 1
        check = await at(datetime(2026, 12, 7, 9, 1, 1, tzinfo=UTC))  # Monday's slot passed too
        assert check.status is Status.UNHEALTHY and check.details["late"] == ["weekdays"]
    finally:
        await app.close()


async def test_a_short_schedule_is_late_only_past_the_misfire_grace(store: Any) -> None:
    app = App(store.url, schema=store.schema, auto_migrate=True)
    await app.open()
    try:
        backend = app.backend
        await backend.schedules_declare([_declaration("fast", every_seconds=1.0)], now=T0)
        for lag, status in ((30, Status.HEALTHY), (61, Status.UNHEALTHY)):
            moment = T0 + timedelta(seconds=1 + lag)
            await backend.schedules_seen(["fast"], now=moment)
            assert (await check_schedules(app, now=moment)).status is status, lag
    finally:
        await app.close()


async def test_readiness_includes_the_schedules_check(store: Any) -> None:
    app = App(store.url, schema=store.schema, auto_migrate=True)
    await app.open()
    try:
        backend = app.backend
        now = datetime.now(UTC)
        await backend.schedules_declare([_declaration("tick")], now=now - timedelta(minutes=10))
        report = await readiness(app)
        assert report.as_json()["checks"]["schedules"]["status"] == "healthy"  # an orphan
        await backend.schedules_seen(["tick"])
        report = await readiness(app)
        checks = report.as_json()["checks"]
        assert checks["schedules"]["status"] == "unhealthy", checks
        assert checks["schedules"]["late"] == ["tick"] and report.http_status == 503
    finally:
        await app.close()
