"""The jobs The Deck's end-to-end tests run in a real worker subprocess.

Run as ``python -m chokaq worker --app sample_app:app`` with this directory on ``PYTHONPATH`` and
``CHOKAQ_DATABASE_URL`` naming the test's SQLite file.
"""

from __future__ import annotations

import asyncio

from chokaq.app import App
from chokaq.context import JobContext
from chokaq.errors import FatalError
from chokaq.settings import WorkerSettings

app = App(
    worker=WorkerSettings(
        concurrency=8,
        heartbeat_min_seconds=0.2,
        heartbeat_max_seconds=0.4,
        worker_beat_interval_seconds=0.5,
        poll_interval_seconds=0.1,
        shutdown_grace_seconds=2.0,
    )
)


@app.job
async def quick(n: int = 0) -> int:
    """Finishes at once."""
    await asyncio.sleep(0.05)
    return n


@app.job
async def steady(steps: int = 20, step_seconds: float = 0.25, ctx: JobContext = None) -> None:  # type: ignore[assignment]
    """Reports progress in ``steps`` steps (the progress bar test)."""
    for i in range(steps):
        await asyncio.sleep(step_seconds)
        ctx.report_progress((i + 1) * 100 / steps)


@app.job
async def charge(amount: int = 0) -> int:
    """Refuses a negative amount for good: the payload has to be fixed by an operator."""
    if amount < 0:
        raise FatalError(f"amount must not be negative (got {amount})")
    return amount
