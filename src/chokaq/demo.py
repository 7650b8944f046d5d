"""The demo application: a sample workload that fills every pillar within a minute.

Fast jobs, slow jobs that report progress, delayed jobs, retries that later succeed, a throttled
partner, a poison pill, a job that times out, an unknown job type, an operator cancel and a job
type whose circuit opens and recovers, and workflows (a fetch, two parses after it and a digest
after both, whose result it returns), one in three with a parse that fails, leaving its digest
blocked. Everything that matters happens on a schedule counted
from the start of the demo (not from the wall clock), so the first minute always shows each
behaviour: the payment gateway is down from second 4 to second 24 (the circuit opens, defers
jobs, probes and closes again), and then again for 20 seconds of every two minutes. The worker
runs with the default circuit policy, so the demo shows what it does: only the gateway's outage
opens a circuit; the partner that throttles now and then, the retries and the exports that run
long fail too rarely to hold their types back.

``chokaq demo`` runs it with a worker and The Deck; nothing here is imported by the library.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time

from .app import App
from .context import JobContext
from .errors import FatalError, ThrottledError
from .policies import RetryPolicy
from .settings import WorkerSettings

__all__ = ["DemoClock", "build_demo_app", "produce"]

GATEWAY_DOWN_FROM_SECONDS = 4.0
GATEWAY_DOWN_FOR_SECONDS = 20.0
GATEWAY_PERIOD_SECONDS = 120.0


class DemoClock:
    """Seconds since the demo started; the outage schedule reads it."""

    def __init__(self) -> None:
        self.started = time.monotonic()

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def gateway_down(self) -> bool:
        phase = (self.elapsed() - GATEWAY_DOWN_FROM_SECONDS) % GATEWAY_PERIOD_SECONDS
        return self.elapsed() >= GATEWAY_DOWN_FROM_SECONDS and phase < GATEWAY_DOWN_FOR_SECONDS


def build_demo_app(url: str, *, schema: str = "chokaq", clock: DemoClock | None = None) -> App:
    """An App on ``url`` with the demo's handlers registered."""
    clock = clock or DemoClock()
    app = App(
        url,
        schema=schema,
        auto_migrate=True,
        worker=WorkerSettings(
            concurrency=12,
            retry=RetryPolicy(max_attempts=3, base_delay_seconds=1.0, jitter_seconds=0.5),
            circuit_delay_seconds=2.0,
            rescue_interval_seconds=5,
            shutdown_grace_seconds=5,
            worker_beat_interval_seconds=1.0,
            # legacy_fax jobs are released for a short while, then REJECTED, so the demo shows
            # both the no-handler notice and the DLQ row.
            unknown_type_grace_seconds=20.0,
        ),
    )
    flaky_state: dict[str, int] = {}

    @app.job(queue="default")
    async def send_receipt(order_id: int, email: str) -> None:
        """A fast job."""
        await asyncio.sleep(random.uniform(0.01, 0.15))

    @app.job(queue="reports", timeout=60)
    async def build_report(report_id: int, ctx: JobContext) -> None:
        """A slow job that reports its progress (3 to 8 seconds)."""
        for step in range(1, 11):
            await asyncio.sleep(random.uniform(0.3, 0.8))
            ctx.report_progress(step * 10)

    @app.job(queue="default")
    def resize_image(image_id: int) -> None:
        """A fast sync job (runs in the thread pool)."""
        time.sleep(random.uniform(0.02, 0.1))

    @app.job(queue="default")
    async def flaky_sync(account: str) -> None:
        """One account in three fails its first execution, then succeeds (a retry that later
        succeeds)."""
        seen = flaky_state.get(account, 0)
        flaky_state[account] = seen + 1
        if seen == 0 and len(flaky_state) % 3 == 0:
            raise ConnectionError(f"upstream reset while syncing {account}")

    @app.job(queue="partners")
    async def call_partner(request_id: int) -> None:
        """A partner API that rate-limits: every eighth request keeps getting 429 until its
        attempts run out (DLQ THROTTLED); others are throttled now and then and get through."""
        if request_id % 8 == 0 or random.random() < 0.1:
            raise ThrottledError("partner API: 429 Too Many Requests", retry_after_seconds=1.0)
        await asyncio.sleep(0.05)

    @app.job(queue="default", max_attempts=1)
    async def parse_invoice(invoice: str) -> None:
        """The poison pill: some invoices can never be parsed (DLQ FATAL_ERROR at once)."""
        if invoice.startswith("corrupt"):
            raise FatalError(f"invoice {invoice!r} is not a PDF")

    @app.job(queue="default", timeout=1.0, max_attempts=1)
    async def slow_export(export_id: int) -> None:
        """One export in three is too big: it runs past its 1-second timeout (DLQ TIMEOUT)."""
        await asyncio.sleep(3.0 if export_id % 3 == 0 else 0.2)

    @app.job(queue="payments", max_attempts=2)
    async def charge_card(payment_id: int) -> None:
        """Fails while the gateway is down: its circuit opens, defers jobs, probes, and closes
        once the gateway is back. Payments that fail twice go to the DLQ as TRANSIENT."""
        if clock.gateway_down():
            raise TimeoutError("payment gateway did not answer")
        await asyncio.sleep(0.05)

    @app.job(queue="feeds")
    async def fetch_feed(feed: str) -> dict[str, object]:
        """The first job of a workflow: its result is read by the parses after it."""
        await asyncio.sleep(random.uniform(0.05, 0.2))
        return {"feed": feed, "items": random.randint(5, 50)}

    @app.job(queue="feeds", max_attempts=1)
    async def parse_feed(part: str, ctx: JobContext) -> int:
        """Runs after fetch_feed; a "corrupt" part fails, so its digest stays blocked."""
        if part.startswith("corrupt"):
            raise FatalError(f"feed part {part!r} is not valid XML")
        [fetched] = ctx.parent_results.values()
        return int(fetched["items"]) // 2

    @app.job(queue="feeds")
    async def publish_digest(ctx: JobContext) -> dict[str, object]:
        """Runs once both parses succeeded (a fan-in); returns what it published."""
        return {"items": sum(ctx.parent_results.values()), "parts": len(ctx.parent_results)}

    @app.periodic(every_seconds=15, name="demo.report-every-15-seconds", kwargs={"report_id": 0})
    @app.periodic(cron="*/5 * * * *", timezone="Europe/Berlin", name="demo.cleanup-every-5-minutes")
    @app.job(queue="reports")
    async def cleanup_reports(report_id: int = -1) -> None:
        """The periodic jobs of the demo (The Deck's Schedules panel): one every 15 s, one on
        a cron expression in Berlin time."""
        await asyncio.sleep(random.uniform(0.05, 0.2))

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
        if n % 4 == 0:
            jobs.append(h["flaky_sync"].prepare(account=f"acct-{n}"))
            jobs.append(h["call_partner"].prepare(request_id=n // 4))
            jobs.append(h["charge_card"].prepare(payment_id=n))
        if n % 10 == 0:
            jobs.append(h["build_report"].prepare(report_id=n, tags=["slow"]))
            jobs.append(h["send_receipt"].prepare(order_id=n, email="later@example.com", delay=15))
        if n % 15 == 0:
            jobs.append(h["parse_invoice"].prepare(invoice=f"corrupt-{n}.pdf"))
            jobs.append(h["slow_export"].prepare(export_id=n // 15))
        if n % 40 == 0:
            # A job type nobody handles (an old deploy's leftovers): released, then REJECTED.
            jobs.append(app.raw("legacy_fax", {"number": n}, queue="default"))
        if n % 20 == 1:
            # A workflow, enqueued as one: fetch -> (parse a, parse b) -> digest.
            fetched = h["fetch_feed"].prepare(feed=f"feed-{n}")
            bad = "corrupt-b" if n % 60 == 1 else "b"
            parts = [h["parse_feed"].prepare(part=part, after=[fetched]) for part in ("a", bad)]
            jobs += [fetched, *parts, h["publish_digest"].prepare(after=parts)]
        ids = await app.enqueue_many(jobs)
        if n % 50 == 0:
            # An operator changes their mind about a delayed job: DLQ CANCELLED.
            await app.backend.jobs_cancel(ids=[ids[-1]], actor="demo-operator")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=len(jobs) / rate_per_second)
