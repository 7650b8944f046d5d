"""Typed handles that must type-check: enqueue, enqueue_sync, prepare, options and a direct
call, for async and sync handlers, with and without a leading JobContext."""

from __future__ import annotations

from datetime import UTC, datetime

from chokaq import App, JobContext, JobId, NewJob

app = App("sqlite:///typing.db")


@app.job
async def send_email(to: str, subject: str, priority: int = 0) -> None: ...


@app.job(queue="reports", timeout_seconds=30)
def build_report(ctx: JobContext, report_id: int) -> str:
    return f"{ctx.job_id}:{report_id}"


@app.job(name="plain", timeout=5)
def plain(n: int, *, label: str = "") -> int:
    return n


async def producer(ctx: JobContext) -> None:
    job_id: JobId = await send_email.enqueue(to="a@b.c", subject="hi")
    await send_email.enqueue("a@b.c", "hi", priority=5)  # priority is the handler's argument
    await send_email.options(priority=20, delay_seconds=60).enqueue(to="a", subject="b")
    await send_email.options(run_at=datetime.now(UTC), tags=["t"], after=[job_id]).enqueue(
        to="a", subject="b"
    )
    await send_email.options(queue="q").options(timeout_seconds=3).enqueue(to="a", subject="b")
    await send_email.options(delay=1, timeout=2, partition="p").enqueue(to="a", subject="b")
    ids: list[JobId] = await send_email.options(priority=1).enqueue_many([{"to": "a"}])
    prepared: NewJob = build_report.prepare(report_id=1)
    await app.enqueue_many([prepared, build_report.options(after=[prepared]).prepare(2)])
    build_report.enqueue_sync(report_id=3)
    text: str = build_report(ctx, 4)
    number: int = plain(1, label="x")
    plain.options(max_attempts=2, idempotency_key="k", created_by="me").enqueue_sync(1)
    latest = await plain.options(idempotency_key="k", on_conflict="replace").enqueue(2)
    outcome: str = latest.outcome
    print(outcome)
    print(ids, text, number)
