"""A worker warns when a stored per-queue zombie timeout is unsafe for its own heartbeat
interval (the stored floor is safe for the default heartbeat only), on both backends."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

from chokaq import App
from chokaq.logs import Event

from .conftest import running, until


def _warnings(caplog: pytest.LogCaptureFixture) -> list[dict[str, object]]:
    return [
        r.chokaq  # type: ignore[attr-defined]
        for r in caplog.records
        if getattr(r, "chokaq", {}).get("event_id") == Event.WORKER_QUEUE_TIMEOUT_UNSAFE
    ]


async def test_a_worker_warns_of_a_queue_zombie_timeout_its_heartbeat_makes_unsafe(
    make_app: Callable[..., App], caplog: pytest.LogCaptureFixture
) -> None:
    # Heartbeats up to 10 s apart: a 20 s zombie timeout is under three intervals.
    app = make_app(heartbeat_min_seconds=8, heartbeat_max_seconds=10, zombie_timeout_seconds=90)

    @app.job(queue="reports")
    async def report() -> None: ...

    await app.open()
    await app.backend.queue_configure(name="reports", zombie_timeout_seconds=20)
    await app.backend.queue_configure(name="default", zombie_timeout_seconds=60)
    caplog.set_level(logging.INFO, logger="chokaq")
    async with running(app):

        async def warned() -> bool:
            return bool(_warnings(caplog))

        await until(warned)
        # Two more registry beats (each reads the queues again) must not repeat the warning.
        for _ in range(2):
            [row] = await app.backend.workers_list()

            async def beat_again(seen: object = row.heartbeat_at) -> bool:
                [now] = await app.backend.workers_list()
                return now.heartbeat_at != seen

            await until(beat_again)
    [warning] = _warnings(caplog)  # once per queue and value, not at every beat
    assert warning["queue"] == "reports"
    assert warning["zombie_timeout_seconds"] == 20
    assert warning["heartbeat_max_seconds"] == 10
    assert next(r for r in caplog.records if getattr(r, "chokaq", None) is warning).levelno == 30
