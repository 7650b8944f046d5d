"""Calls a type checker must refuse; each ``# E: <code>`` names the error expected there."""

from __future__ import annotations

from chokaq import App, JobContext

app = App("sqlite:///typing.db")


@app.job
async def send_email(to: str, subject: str) -> None: ...


@app.job(queue="reports")
def build_report(ctx: JobContext, report_id: int) -> str:
    return str(report_id)


async def producer(ctx: JobContext) -> None:
    await send_email.enqueue(too="x", subject="s")  # E: call-arg
    await send_email.enqueue(to=123, subject="s")  # E: arg-type
    await send_email.enqueue(to="a")  # E: call-arg
    await send_email.enqueue(to="a", subject="b", priority=5)  # E: call-arg
    send_email.enqueue_sync(to="a", subject=None)  # E: arg-type
    send_email.prepare("a", "b", "c")  # E: call-arg
    await send_email.options(priority="high").enqueue(to="a", subject="b")  # E: arg-type
    await send_email.options(colour="red").enqueue(to="a", subject="b")  # E: call-arg
    await send_email.options(on_conflict="merge").enqueue(to="a", subject="b")  # E: arg-type
    await send_email.options(delay_seconds=1).enqueue(to="a")  # E: call-arg
    send_email.options(queue="q").enqueue_sync(to=1, subject="b")  # E: arg-type
    build_report.prepare(report_id="1")  # E: arg-type
    build_report.enqueue_sync(ctx, report_id=1)  # E: arg-type
    build_report(report_id=1)  # E: call-arg
    count: int = build_report(ctx, 1)  # E: assignment
    print(count)
