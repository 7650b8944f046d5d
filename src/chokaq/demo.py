"""The demo application: a sample workload that fills every pillar within a minute.

Fast jobs, slow jobs that report progress, delayed jobs, retries that later succeed, a
throttled partner, a poison pill, a job that times out and a job type whose circuit opens and
recovers. ``chokaq demo`` runs it with a worker and The Deck; nothing here is imported by the
library itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time

from .app import App
from .context import JobContext
from .errors import FatalError, ThrottledError
from .runtime.circuit import CircuitPolicy
from .runtime.retry import RetryPolicy
from .runtime.settings import WorkerSettings

__all__ = ["build_demo_app", "produce"]


def build_demo_app(url: str) -> App:
    """An App on ``url`` with the demo's handlers registered."""
    app = App(
        url,
        auto_migrate=True,
        worker=WorkerSettings(
            concurrency=8,
            retry=RetryPolicy(max_attempts=3, base_delay_seconds=1.0, jitter_seconds=0.5),
            circuit=CircuitPolicy(threshold=3, window_seconds=30, break_seconds=10),
            rescue_interval_seconds=5,
        ),
    )
    flaky_state: dict[str, int] = {}
    partner_window = {"until": 0.0}

    @app.job(queue="default")
    async def send_receipt(order_id: int, email: str) -> None:
        await asyncio.sleep(random.uniform(0.01, 0.15))

    @app.job(queue="reports", timeout=60)
    async def build_report(report_id: int, ctx: JobContext) -> None:
        for step in range(1, 11):
            await asyncio.sleep(random.uniform(0.3, 0.8))
            ctx.report_progress(step * 10)

    @app.job(queue="default")
    def resize_image(image_id: int) -> None:
        time.sleep(random.uniform(0.02, 0.1))

    @app.job(queue="default")
    async def flaky_sync(account: str) -> None:
        """Fails its first execution, then succeeds (a retry that later succeeds)."""
        seen = flaky_state.get(account, 0)
        flaky_state[account] = seen + 1
        if seen == 0:
            raise ConnectionError(f"upstream reset while syncing {account}")

    @app.job(queue="partners")
    async def call_partner(request_id: int) -> None:
        """A partner that throttles now and then, asking us to come back in 2 seconds."""
        if time.monotonic() < partner_window["until"] or random.random() < 0.3:
            partner_window["until"] = time.monotonic() + 1.0
            raise ThrottledError("partner API: 429 Too Many Requests", retry_after_seconds=2.0)

    @app.job(queue="default", max_attempts=1)
    async def parse_invoice(invoice: str) -> None:
        """The poison pill: some invoices can never be parsed."""
        if invoice.startswith("corrupt"):
            raise FatalError(f"invoice {invoice!r} is not a PDF")

    @app.job(queue="default", timeout=1.0)
    async def slow_export(export_id: int) -> None:
        await asyncio.sleep(3.0)

    @app.job(queue="payments", max_attempts=2)
    async def charge_card(payment_id: int) -> None:
        """Fails while the gateway is down (the first ~20 s of each minute): its circuit opens,
        then recovers once the gateway is back."""
        if time.time() % 60 < 20:
            raise TimeoutError("payment gateway did not answer")
        await asyncio.sleep(0.05)

    return app


async def produce(app: App, *, stop: asyncio.Event, rate_per_second: float = 20.0) -> None:
    """Enqueue a mixed workload until ``stop`` is set."""
    h = app.handlers
    n = 0
    await app.enqueue_many(
        [h["send_receipt"].prepare(order_id=i, email=f"c{i}@example.com") for i in range(50)]
    )
    while not stop.is_set():
        n += 1
        jobs = [
            h["send_receipt"].prepare(order_id=n, email=f"customer{n}@example.com", tags=["shop"]),
            h["resize_image"].prepare(image_id=n),
        ]
        if n % 5 == 0:
            jobs.append(h["flaky_sync"].prepare(account=f"acct-{n}"))
            jobs.append(h["call_partner"].prepare(request_id=n))
            jobs.append(h["charge_card"].prepare(payment_id=n))
        if n % 10 == 0:
            jobs.append(h["build_report"].prepare(report_id=n, tags=["slow"]))
            jobs.append(h["send_receipt"].prepare(order_id=n, email="later@example.com", delay=15))
        if n % 15 == 0:
            jobs.append(h["parse_invoice"].prepare(invoice=f"corrupt-{n}.pdf"))
            jobs.append(h["slow_export"].prepare(export_id=n))
        await app.enqueue_many(jobs)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=len(jobs) / rate_per_second)
