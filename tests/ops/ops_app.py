"""Jobs for the operations tests, on the store named by ``CHOKAQ_DATABASE_URL`` and
``CHOKAQ_SCHEMA`` (a worker subprocess imports it as ``tests.ops.ops_app:app``)."""

from __future__ import annotations

import asyncio
import os

from chokaq import App, FatalError, Limits, RetryPolicy, WorkerSettings
from chokaq.limits import DEFAULT_LIMITS

FAST = dict(
    heartbeat_min_seconds=0.1,
    heartbeat_max_seconds=0.2,
    # No test of this app waits for a rescue, and a busy CI machine can stall a process for
    # seconds: a 2 s zombie timeout once dead-lettered a job as a zombie mid-test.
    zombie_timeout_seconds=30.0,
    fetched_timeout_seconds=30.0,
    rescue_interval_seconds=0.3,
    poll_interval_seconds=0.02,
    worker_beat_interval_seconds=0.2,
    shutdown_grace_seconds=2.0,
    retry=RetryPolicy(max_attempts=2, base_delay_seconds=0.05, jitter_seconds=0),
)


def build(
    url: str | None = None, schema: str | None = None, limits: Limits = DEFAULT_LIMITS
) -> App:
    app = App(
        url or os.environ.get("CHOKAQ_DATABASE_URL", "sqlite:///ops.db"),
        schema=schema or os.environ.get("CHOKAQ_SCHEMA", "chokaq"),
        limits=limits,
        auto_migrate=True,
        worker=WorkerSettings(**FAST),  # type: ignore[arg-type]
    )

    @app.job(queue="default")
    async def ok(n: int = 0) -> int:
        return n

    @app.job(queue="default")
    async def summary(n: int = 0) -> dict[str, object]:
        """A result with some shape, for ``chokaq job show`` and ``job wait``."""
        return {"n": n, "squares": [i * i for i in range(n)], "label": f"summary {n}"}

    @app.job(queue="default")
    async def opaque() -> object:
        """Succeeds with a value JSON cannot hold: the worker does not keep it."""
        return {1, 2}

    @app.job(queue="default", max_attempts=1)
    async def poison(n: int = 0) -> None:
        raise FatalError(f"poison {n}")

    @app.job(queue="mail")
    async def flaky(n: int = 0) -> None:
        raise ConnectionError(f"flaky {n}")

    @app.job(queue="default", timeout=0.2, max_attempts=1)
    async def slow(n: int = 0) -> None:
        await asyncio.sleep(5)

    @app.job(queue="default")
    async def spawner(children: int = 3) -> None:
        """Enqueues ``children`` ok jobs from inside the worker (counted as enqueued there)."""
        await app.enqueue_many([app.handlers["ok"].prepare(n=i) for i in range(children)])

    return app


app = build()


def large() -> App:
    """The same jobs on an App that takes payloads of up to 20 MB (``--app ...:large``)."""
    return build(limits=Limits(max_payload_bytes=20_000_000))
