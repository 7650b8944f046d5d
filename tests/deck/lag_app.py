"""The jobs of The Deck's "Why the wait" browser test, run in a real worker subprocess.

Run as ``python -m chokaq worker --app lag_app:app`` with this directory on ``PYTHONPATH`` and
``CHOKAQ_DATABASE_URL`` naming the test's SQLite file. ``send`` always fails (its dependency is
down): two failures open its circuit, which stays open for the whole test. ``report`` runs long,
so that due reports are still waiting for a slot once the worker serves their queue.
"""

from __future__ import annotations

import asyncio

from chokaq.app import App
from chokaq.policies import CircuitPolicy
from chokaq.settings import WorkerSettings

app = App(
    worker=WorkerSettings(
        concurrency=2,
        heartbeat_min_seconds=0.2,
        heartbeat_max_seconds=0.4,
        worker_beat_interval_seconds=0.5,
        poll_interval_seconds=0.1,
        shutdown_grace_seconds=1.0,
        circuit=CircuitPolicy(threshold=2, window_seconds=600, break_seconds=600),
    )
)


@app.job(queue="emails", max_attempts=1)
async def send(to: str = "") -> None:
    """Fails: the mail server is down."""
    raise ConnectionError("mail server unreachable")


@app.job(queue="reports")
async def report(seconds: float = 30.0) -> None:
    """Holds a slot for ``seconds``."""
    await asyncio.sleep(seconds)
