"""Apps with rate-limited and partitioned handlers, for worker subprocess tests (configured from
the environment like ``sample``).

``app`` declares its limits (a type at 20/s, one at 50/s, one at 1/m, a partition cap of 1 and
one of 10); ``plain`` declares none, so that its workers take the plain claim until an
operator sets a limit. ``serial`` records each execution's start and end in
``CHOKAQ_TEST_DIR/ledger`` (one ``write`` of an ``O_APPEND`` file per line, so that lines of
several processes never interleave), to show what ran at once even for an execution whose
process was killed before its row could say so.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from chokaq import App, JobContext, RetryPolicy, WorkerSettings

MARKERS = Path(os.environ.get("CHOKAQ_TEST_DIR", "/tmp"))
LEDGER = MARKERS / "ledger"


def _settings() -> WorkerSettings:
    poll = os.environ.get("CHOKAQ_POLL")
    return WorkerSettings(
        heartbeat_min_seconds=0.2,
        heartbeat_max_seconds=0.3,
        zombie_timeout_seconds=float(os.environ.get("CHOKAQ_ZOMBIE_TIMEOUT", "2")),
        fetched_timeout_seconds=2.0,
        rescue_interval_seconds=0.3,
        leadership_lease_seconds=float(os.environ.get("CHOKAQ_LEASE", "2")),
        leadership_renew_seconds=float(os.environ.get("CHOKAQ_LEASE_RENEW", "0.5")),
        # Unset: the worker's own default (on PostgreSQL, a long poll that NOTIFY cuts short).
        poll_interval_seconds=None if poll is None else float(poll),
        worker_beat_interval_seconds=0.3,
        shutdown_grace_seconds=2.0,
        retry=RetryPolicy(max_attempts=3, base_delay_seconds=0.1, jitter_seconds=0),
    )


def _app() -> App:
    return App(
        os.environ.get("CHOKAQ_DATABASE_URL", "sqlite:///limited.db"),
        schema=os.environ.get("CHOKAQ_SCHEMA", "chokaq"),
        auto_migrate=True,
        worker=_settings(),
    )


app = _app()
plain = _app()


def record(*fields: object) -> None:
    line = " ".join(str(f) for f in fields) + "\n"
    fd = os.open(LEDGER, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


@app.job(rate_limit="20/s")
async def paced(n: int) -> None:
    """Does nothing: the archive's started_at is what the test reads."""


@app.job(rate_limit="50/s")
async def tunable(n: int) -> None:
    """Does nothing, at 50/s unless an operator says otherwise."""


@app.job(rate_limit="1/m")
async def trickle(n: int) -> None:
    """Does nothing, once a minute unless an operator says otherwise."""


@app.job(partition_concurrency=1)
async def serial(account: str, seconds: float, ctx: JobContext, hang: bool = False) -> None:
    """Records its start and end; with ``hang``, its first attempt runs until killed."""
    record("start", ctx.job_id, ctx.attempt, account, os.getpid(), repr(time.time()))
    if hang and ctx.attempt == 1:
        await asyncio.sleep(3600)
    await asyncio.sleep(seconds)
    record("end", ctx.job_id, ctx.attempt, account, os.getpid(), repr(time.time()))


@app.job(partition_concurrency=10)
async def report(tenant: str, seconds: float) -> None:
    await asyncio.sleep(seconds)


@plain.job()
async def unlimited(n: int, seconds: float) -> None:
    """No limit of its own: runs as fast as the workers' slots free up."""
    await asyncio.sleep(seconds)
