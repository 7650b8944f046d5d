"""Durable jobs on an in-process worker (both backends): a step runs once across retries, a
sleep suspends the job and it resumes with no attempt used, an event wakes a waiting job
(sent before or after the wait), a wait times out, plain ``def`` handlers make the same calls,
and bad input is refused naming the field before anything is written."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import pytest
from tests.runtime.conftest import running, until

from chokaq import App, JobContext
from chokaq.errors import ValidationError
from chokaq.models import JobStatus, Pillar, StepKind, StepState


async def _pillar(app: App, job_id: str) -> Pillar | None:
    view = await app.backend.job_get(job_id)
    return None if view is None else view.pillar


async def _status(app: App, job_id: str) -> JobStatus | None:
    view = await app.backend.job_get(job_id)
    return None if view is None else view.status


async def _finished(app: App, job_id: str) -> bool:
    return await _pillar(app, job_id) in (Pillar.ARCHIVE, Pillar.DLQ)


async def test_a_step_runs_once_across_retries(make_app: Any) -> None:
    app = make_app()
    calls: Counter[str] = Counter()

    def charge(amount: int) -> dict[str, int]:
        calls["charge"] += 1
        return {"charged": amount}

    @app.job(durable=True, max_attempts=3)
    async def pay(ctx: JobContext, amount: int) -> int:
        receipt = await ctx.step("charge", charge, amount)
        calls["after"] += 1
        if ctx.attempt == 1:
            raise RuntimeError("the mailer is down")
        return int(receipt["charged"])

    job_id = await pay.enqueue(amount=42)
    async with running(app):
        await until(lambda: _finished(app, job_id))
    assert await app.result(job_id, timeout_seconds=5) == 42
    assert calls == Counter({"charge": 1, "after": 2})
    [step] = await app.backend.steps_list(job_id=job_id)
    assert (step.name, step.kind, step.state, step.value) == (
        "charge",
        StepKind.STEP,
        StepState.DONE,
        '{"charged":42}',
    )


async def test_a_failing_step_records_its_error_and_runs_again(make_app: Any) -> None:
    app = make_app()
    calls: Counter[str] = Counter()

    async def flaky() -> str:
        calls["flaky"] += 1
        if calls["flaky"] == 1:
            raise ConnectionError("reset by peer")
        return "ok"

    @app.job(durable=True, max_attempts=3)
    async def job(ctx: JobContext) -> str:
        first = await ctx.step("first", lambda: "one")
        return first + "/" + await ctx.step("flaky", flaky)

    job_id = await job.enqueue()
    async with running(app):
        await until(lambda: _finished(app, job_id))
    assert await app.result(job_id, timeout_seconds=5) == "one/ok"
    assert calls["flaky"] == 2
    assert [s.state for s in await app.backend.steps_list(job_id=job_id)] == [StepState.DONE] * 2


async def test_the_same_step_name_twice_in_one_run_is_refused(make_app: Any) -> None:
    app = make_app()

    @app.job(durable=True, max_attempts=1)
    async def twice(ctx: JobContext) -> None:
        await ctx.step("a", lambda: 1)
        await ctx.step("a", lambda: 2)

    job_id = await twice.enqueue()
    async with running(app):
        await until(lambda: _finished(app, job_id))
    view = await app.backend.job_get(job_id)
    assert view.pillar is Pillar.DLQ and "step 'a' was called twice" in (view.error or "")


async def test_a_sleep_frees_the_job_and_resumes_it_with_no_attempt_used(make_app: Any) -> None:
    app = make_app()
    runs: Counter[str] = Counter()

    @app.job(durable=True)
    async def nap(ctx: JobContext) -> int:
        runs["top"] += 1
        await ctx.sleep(1.0)
        runs["after"] += 1
        return ctx.attempt

    job_id = await nap.enqueue()
    async with running(app):
        await until(lambda: _suspended(app, job_id))
        await until(lambda: _finished(app, job_id))
    assert await app.result(job_id, timeout_seconds=5) == 1
    assert runs == Counter({"top": 2, "after": 1})
    view = await app.backend.job_get(job_id)
    assert view.attempt_count == 1
    [sleep] = await app.backend.steps_list(job_id=job_id)
    assert (sleep.name, sleep.kind, sleep.state) == ("sleep#1", StepKind.SLEEP, StepState.DONE)


async def _suspended(app: App, job_id: str) -> bool:
    return await _status(app, job_id) is JobStatus.SUSPENDED


async def test_an_event_wakes_the_waiting_job(make_app: Any) -> None:
    app = make_app()

    @app.job(durable=True)
    async def approve(ctx: JobContext, user: int) -> Any:
        return await ctx.wait_for_event(f"verified-{user}", timeout_seconds=600)

    job_id = await approve.enqueue(user=42)
    async with running(app):
        await until(lambda: _suspended(app, job_id))
        assert await app.send_event("verified-42", {"ok": True}) == job_id
        await until(lambda: _finished(app, job_id))
    assert await app.result(job_id, timeout_seconds=5) == {"ok": True}
    assert (await app.backend.job_get(job_id)).attempt_count == 1


async def test_an_event_sent_before_the_wait_is_kept_for_it(make_app: Any) -> None:
    app = make_app()

    @app.job(durable=True)
    async def later(ctx: JobContext) -> Any:
        return await ctx.wait_for_event("early")

    await app.open()
    assert await app.send_event("early", [1, 2]) is None
    job_id = await later.enqueue()
    async with running(app):
        await until(lambda: _finished(app, job_id))
    assert await app.result(job_id, timeout_seconds=5) == [1, 2]


async def test_a_wait_times_out_inside_the_handler(make_app: Any) -> None:
    app = make_app()

    @app.job(durable=True)
    async def patient(ctx: JobContext) -> str:
        try:
            await ctx.wait_for_event("never", timeout_seconds=0.5)
        except TimeoutError as exc:
            return f"timed out: {exc}"
        return "got it"

    job_id = await patient.enqueue()
    async with running(app):
        await until(lambda: _finished(app, job_id))
    assert (await app.result(job_id, timeout_seconds=5)).startswith("timed out: no event 'never'")
    [wait] = await app.backend.steps_list(job_id=job_id)
    assert (wait.kind, wait.error) == (StepKind.WAIT, "timeout")


async def test_plain_def_handlers_make_the_same_calls(make_app: Any) -> None:
    app = make_app()
    calls: Counter[str] = Counter()

    def count() -> int:
        calls["count"] += 1
        return 7

    @app.job(durable=True)
    def sync_flow(ctx: JobContext) -> int:
        value = ctx.step("count", count)
        ctx.sleep(0.5)
        data = ctx.wait_for_event("sync-key", timeout_seconds=600)
        return int(value) + int(data["n"])

    job_id = await sync_flow.enqueue()
    async with running(app):
        await until(lambda: _waiting_for_event(app, job_id))
        await app.send_event("sync-key", {"n": 3})
        await until(lambda: _finished(app, job_id))
    assert await app.result(job_id, timeout_seconds=5) == 10
    assert calls["count"] == 1


async def _waiting_for_event(app: App, job_id: str) -> bool:
    steps = await app.backend.steps_list(job_id=job_id)
    return await _suspended(app, job_id) and any(s.kind is StepKind.WAIT for s in steps)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ("sleep:-1", "seconds"),
        ("sleep:nan", "seconds"),
        (f"sleep:{366 * 86_400 + 1}", "seconds"),
        ("step:", "name"),
        ("step:" + "x" * 201, "name"),
        ("wait:" + "k" * 201, "key"),
    ],
)
async def test_bad_durable_input_is_refused_naming_the_field(
    make_app: Any, body: str, field: str
) -> None:
    app = make_app()

    @app.job(durable=True, max_attempts=1)
    async def bad(ctx: JobContext, body: str) -> None:
        kind, _, arg = body.partition(":")
        if kind == "sleep":
            await ctx.sleep(float(arg))
        elif kind == "step":
            await ctx.step(arg, lambda: 1)
        else:
            await ctx.wait_for_event(arg)

    job_id = await bad.enqueue(body=body)
    async with running(app):
        await until(lambda: _finished(app, job_id))
    view = await app.backend.job_get(job_id)
    assert view.pillar is Pillar.DLQ
    assert f"ValidationError: {field}:" in (view.error or "")
    assert await app.backend.steps_list(job_id=job_id) == []


async def test_send_event_refuses_bad_input(make_app: Any) -> None:
    app = make_app()
    await app.open()
    with pytest.raises(ValidationError) as caught:
        await app.send_event("k", {1, 2})
    assert caught.value.field == "data"
    with pytest.raises(ValidationError) as caught:
        await app.send_event("", 1)
    assert caught.value.field == "key"


async def test_a_non_durable_job_cannot_sleep(make_app: Any) -> None:
    app = make_app()

    @app.job(max_attempts=1)
    async def plain(ctx: JobContext) -> None:
        await ctx.sleep(1)

    job_id = await plain.enqueue()
    async with running(app):
        await until(lambda: _finished(app, job_id))
    assert "need @app.job(durable=True)" in ((await app.backend.job_get(job_id)).error or "")


async def test_a_parent_spawns_children_and_gathers_their_results(make_app: Any) -> None:
    app = make_app()
    runs: Counter[str] = Counter()

    @app.job(max_attempts=1)
    async def square(n: int) -> int:
        if n == 3:
            raise ValueError("three is unlucky")
        return n * n

    @app.job(durable=True)
    async def fan_out(ctx: JobContext) -> list[Any]:
        runs["top"] += 1
        ids = await ctx.spawn([square.prepare(n=n) for n in range(5)])
        results = await ctx.gather(ids, return_exceptions=True)
        return [r if not isinstance(r, Exception) else type(r).__name__ for r in results]

    job_id = await fan_out.enqueue()
    async with running(app):
        await until(lambda: _finished(app, job_id), timeout=30)
    assert await app.result(job_id, timeout_seconds=5) == [0, 1, 4, "JobFailedError", 16]
    assert runs["top"] == 2  # the first run suspended in the gather; the replay finished
    assert (await app.backend.stats_summary()).succeeded_total == 5  # 4 children, the parent
    view = await app.backend.job_get_related(id=job_id)
    assert len(view.children) == 5 and view.attempt_count == 1


async def test_a_failed_child_raises_in_the_parent(make_app: Any) -> None:
    app = make_app()

    @app.job(max_attempts=1)
    async def boom() -> None:
        raise RuntimeError("no")

    @app.job(durable=True, max_attempts=1)
    def parent(ctx: JobContext) -> None:
        ids = ctx.spawn([boom.prepare()])
        ctx.gather(ids)

    job_id = await parent.enqueue()
    async with running(app):
        await until(lambda: _finished(app, job_id), timeout=30)
    view = await app.backend.job_get(job_id)
    assert view.pillar is Pillar.DLQ and "JobFailedError" in (view.error or "")


async def test_concurrent_jobs_steps_are_recorded_in_one_statement(make_app: Any) -> None:
    """The worker's step batcher: steps that finish together are written together (one
    ``steps_record_many`` for all of them, not one statement per step), each job's own
    outcome handed back, and a job's steps still read back in order."""
    app = make_app()
    jobs = 20
    entered = 0
    gate = asyncio.Event()
    writes: list[str] = []
    app.backend.add_observer(lambda op, _s, _e: writes.append(op) if "record" in op else None)

    async def together(n: int) -> int:
        nonlocal entered
        entered += 1
        if entered == jobs:
            gate.set()
        await gate.wait()
        return n

    @app.job(durable=True)
    async def gated(ctx: JobContext, n: int) -> int:
        return int(await ctx.step("together", together, n))

    ids = [await gated.enqueue(n=n) for n in range(jobs)]
    async with running(app, concurrency=jobs):
        for job_id in ids:
            await until(lambda job_id=job_id: _finished(app, job_id))
    assert [await app.result(job_id, timeout_seconds=5) for job_id in ids] == list(range(jobs))
    assert writes == ["steps_record_many"]
    listed = await app.backend.steps_list_many(job_ids=ids)
    assert [[(s.name, s.value) for s in listed[j]] for j in ids] == [
        [("together", str(n))] for n in range(jobs)
    ]
