"""A sample app with periodic schedules, for worker subprocess tests (configured from the
environment like ``sample``): two schedules every 2 s, one missing what it missed
(``misfire="latest"``), one catching up on every slot (``misfire="all"``)."""

from __future__ import annotations

import os

from chokaq import App, WorkerSettings

EVERY = float(os.environ.get("CHOKAQ_EVERY", "2"))

app = App(
    os.environ.get("CHOKAQ_DATABASE_URL", "sqlite:///periodic.db"),
    schema=os.environ.get("CHOKAQ_SCHEMA", "chokaq"),
    auto_migrate=True,
    worker=WorkerSettings(
        heartbeat_min_seconds=0.2,
        heartbeat_max_seconds=0.3,
        zombie_timeout_seconds=2.0,
        rescue_interval_seconds=0.3,
        leadership_lease_seconds=float(os.environ.get("CHOKAQ_LEASE", "2")),
        leadership_renew_seconds=float(os.environ.get("CHOKAQ_LEASE_RENEW", "0.5")),
        schedule_tick_seconds=float(os.environ.get("CHOKAQ_TICK", "0.2")),
        poll_interval_seconds=0.05,
        worker_beat_interval_seconds=0.3,
        shutdown_grace_seconds=2.0,
    ),
)


@app.periodic(every_seconds=EVERY, name="tick-latest", kwargs={"tag": "latest"})
@app.periodic(every_seconds=EVERY, name="tick-all", kwargs={"tag": "all"}, misfire="all")
@app.job()
async def tick(tag: str) -> None:
    """Does nothing: the test reads the jobs and the schedule's records."""
