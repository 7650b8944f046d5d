"""A sample app for worker subprocess tests, configured from the environment.

Handlers coordinate with the test through marker files in ``CHOKAQ_TEST_DIR``.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from chokaq import App, CircuitPolicy, JobContext, RetryPolicy, WorkerSettings

MARKERS = Path(os.environ.get("CHOKAQ_TEST_DIR", "/tmp"))

app = App(
    os.environ.get("CHOKAQ_DATABASE_URL", "sqlite:///sample.db"),
    schema=os.environ.get("CHOKAQ_SCHEMA", "chokaq"),
    auto_migrate=True,
    busy_timeout_seconds=float(os.environ.get("CHOKAQ_BUSY_TIMEOUT", "10")),
    worker=WorkerSettings(
        heartbeat_min_seconds=float(os.environ.get("CHOKAQ_HEARTBEAT_MIN", "0.2")),
        heartbeat_max_seconds=float(os.environ.get("CHOKAQ_HEARTBEAT_MAX", "0.3")),
        zombie_timeout_seconds=float(os.environ.get("CHOKAQ_ZOMBIE_TIMEOUT", "2")),
        fetched_timeout_seconds=float(os.environ.get("CHOKAQ_FETCHED_TIMEOUT", "2")),
        rescue_interval_seconds=float(os.environ.get("CHOKAQ_RESCUE_INTERVAL", "0.3")),
        leadership_lease_seconds=float(os.environ.get("CHOKAQ_LEASE", "2")),
        leadership_renew_seconds=float(os.environ.get("CHOKAQ_LEASE_RENEW", "0.5")),
        poll_interval_seconds=float(os.environ.get("CHOKAQ_POLL_INTERVAL", "0.05")),
        worker_beat_interval_seconds=0.3,
        shutdown_grace_seconds=float(os.environ.get("CHOKAQ_GRACE", "5")),
        retry=RetryPolicy(
            max_attempts=3,
            base_delay_seconds=float(os.environ.get("CHOKAQ_RETRY_DELAY", "0.1")),
            jitter_seconds=0,
        ),
        circuit=CircuitPolicy(threshold=int(os.environ.get("CHOKAQ_CIRCUIT_THRESHOLD", "5"))),
        **(
            {"burst_horizon_seconds": float(os.environ["CHOKAQ_BURST_HORIZON"])}
            if "CHOKAQ_BURST_HORIZON" in os.environ
            else {}
        ),
    ),
)


def mark(name: str) -> None:
    (MARKERS / name).write_text(str(os.getpid()))


@app.job()
async def hang(tag: str) -> None:
    """Marks that it started, then runs until cancelled."""
    mark(f"started-{tag}")
    await asyncio.sleep(3600)


@app.job()
async def sleepy(tag: str, seconds: float) -> None:
    mark(f"started-{tag}")
    await asyncio.sleep(seconds)
    mark(f"done-{tag}")


@app.job()
def sync_sleepy(tag: str, seconds: float, ctx: JobContext) -> None:
    mark(f"started-{tag}")
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not ctx.cancel_requested:
        time.sleep(0.01)
    mark(f"done-{tag}")


@app.job()
async def blocking(tag: str, seconds: float) -> None:
    """An async handler that blocks its worker's event loop (a bug in user code, on purpose)."""
    mark(f"started-{tag}")
    time.sleep(seconds)  # noqa: ASYNC251
    mark(f"done-{tag}")


@app.job()
async def gated(tag: str, gate: str) -> None:
    """Marks that it started, then finishes once the test creates the file ``gate``: the test
    decides when it ends (during an outage, say) without knowing when it started."""
    mark(f"started-{tag}")
    while not (MARKERS / gate).exists():
        await asyncio.sleep(0.02)
    mark(f"done-{tag}")


@app.job()
async def quick(tag: str) -> None:
    mark(f"done-{tag}")


@app.job()
async def flaky_once(tag: str, ctx: JobContext) -> None:
    """Fails its first attempt (a dependency hiccup), then succeeds."""
    if ctx.attempt == 1:
        raise ConnectionError(f"{tag}: first attempt fails")
    mark(f"done-{tag}")


@app.job()
async def down(tag: str) -> None:
    """Its dependency is down: every attempt fails."""
    raise ConnectionError(f"{tag}: the dependency is down")
