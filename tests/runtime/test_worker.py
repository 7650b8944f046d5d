"""The worker in-process, on both backends: outcomes, retries, timeouts, cancel, circuits."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from chokaq import (
    App,
    CircuitPolicy,
    Fail,
    FailureReason,
    FatalError,
    JobContext,
    Retry,
    RetryPolicy,
    ThrottledError,
    ValidationError,
)
from chokaq.models import JobFilter, JobStatus, NewJob, Pillar

from .conftest import running, until


async def pillar_of(app: App, job_id: str) -> Pillar | None:
    view = await app.backend.job_get(job_id)
    return view.pillar if view else None


async def test_jobs_run_concurrently_and_land_in_the_archive(make_app: Callable[..., App]) -> None:
    app = make_app()
    seen: list[int] = []
    in_flight = 0
    peak = 0

    @app.job(queue="work")
    async def work(i: int) -> None:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.02)
        in_flight -= 1
        seen.append(i)

    @app.job()
    def blocking(i: int) -> None:
        time.sleep(0.01)
        seen.append(-i)

    await app.open()
    await work.enqueue_many([{"i": i} for i in range(40)])
    await blocking.enqueue_many([{"i": i} for i in range(1, 6)])
    await app.run_worker(burst=True, concurrency=5)
    assert sorted(seen) == sorted([*range(40), *(-i for i in range(1, 6))])
    assert peak == 5
    summary = await app.backend.stats_summary()
    assert (summary.pending, summary.processing, summary.succeeded_total) == (0, 0, 45)


async def test_a_failing_job_retries_after_the_backoff_and_then_succeeds(
    make_app: Callable[..., App],
) -> None:
    app = make_app(retry=RetryPolicy(max_attempts=3, base_delay_seconds=0.3, jitter_seconds=0))
    calls: list[float] = []

    @app.job()
    async def flaky() -> None:
        calls.append(time.monotonic())
        if len(calls) == 1:
            raise ConnectionError("reset by peer")

    await app.open()
    job_id = await flaky.enqueue()
    async with running(app):
        await until(lambda: _in(app, job_id, Pillar.ARCHIVE))
    assert len(calls) == 2
    assert calls[1] - calls[0] >= 0.3  # the first retry waits the base delay
    view = await app.backend.job_get(job_id)
    assert view is not None and view.attempt_count == 2
    assert (await app.backend.stats_summary()).retried_total == 1


async def _in(app: App, job_id: str, pillar: Pillar) -> bool:
    return await pillar_of(app, job_id) is pillar


async def dlq_reason(app: App, job_id: str) -> FailureReason | None:
    view = await app.backend.job_get(job_id)
    return view.failure_reason if view is not None and view.pillar is Pillar.DLQ else None


async def test_each_failure_path_ends_where_documented(make_app: Callable[..., App]) -> None:
    app = make_app(
        retry=RetryPolicy(max_attempts=2, base_delay_seconds=0.05, jitter_seconds=0),
        fatal_exceptions=(KeyError,),
        circuit=CircuitPolicy(enabled=False),
        unknown_type_grace_seconds=0.3,  # released, then rejected once the grace is spent
    )

    @app.job()
    async def fatal() -> None:
        raise FatalError("poison pill")

    @app.job()
    async def configured_fatal() -> None:
        raise KeyError("missing")

    @app.job()
    async def always_fails() -> None:
        raise RuntimeError("still broken")

    @app.job()
    async def throttled() -> None:
        raise ThrottledError("429", retry_after_seconds=0.05)

    @app.job()
    async def gives_up() -> Fail:
        return Fail("customer closed the account")

    @app.job()
    async def keeps_retrying() -> Retry:
        return Retry(after_seconds=0.05)

    @app.job(timeout=0.2)
    async def too_slow() -> None:
        await asyncio.sleep(10)

    @app.job(timeout=0.2)
    def too_slow_sync() -> str:
        time.sleep(0.6)
        return "ignored"

    @app.job()
    async def with_args(n: int) -> None: ...

    await app.open()
    expected = {
        await fatal.enqueue(): FailureReason.FATAL_ERROR,
        await configured_fatal.enqueue(): FailureReason.FATAL_ERROR,
        await always_fails.enqueue(): FailureReason.TRANSIENT,
        await throttled.enqueue(): FailureReason.THROTTLED,
        await gives_up.enqueue(): FailureReason.FATAL_ERROR,
        await keeps_retrying.enqueue(): FailureReason.MAX_RETRIES_EXCEEDED,
        await too_slow.enqueue(): FailureReason.TIMEOUT,
        await too_slow_sync.enqueue(): FailureReason.TIMEOUT,
        (await app.enqueue_raw("nobody_handles_this", {})): FailureReason.REJECTED,
        (await app.enqueue_raw("with_args", {"m": 1})): FailureReason.REJECTED,
        (await app.enqueue_raw("with_args", [1, 2])): FailureReason.REJECTED,
    }
    async with running(app):

        async def all_dead() -> bool:
            return all([await dlq_reason(app, i) is not None for i in expected])

        await until(all_dead)
    for job_id, reason in expected.items():
        assert await dlq_reason(app, job_id) is reason, job_id
    failed = (await app.backend.stats_summary()).failed_total
    assert failed == len(expected)
    throughput = await app.backend.stats_throughput()
    assert throughput.failed_1m == len(expected)


async def test_a_handler_that_raises_cancelled_error_itself_is_an_ordinary_failure(
    make_app: Callable[..., App],
) -> None:
    # The handler awaits a sub-task that was cancelled (a timeout inside a library, a sibling
    # cancelled by a TaskGroup): CancelledError comes out of the handler although the worker
    # never cancelled it. It used to record nothing: heartbeats stopped and the job became a
    # zombie. It is a failure like any other, retried by the policy.
    app = make_app()
    runs: list[int] = []

    @app.job()
    async def awaits_cancelled(ctx: JobContext) -> None:
        runs.append(ctx.attempt)
        sub = asyncio.ensure_future(asyncio.sleep(30))
        sub.cancel()
        await sub

    @app.job()
    def sync_cancelled() -> None:
        raise asyncio.CancelledError("cancelled inside a sync library")

    await app.open()
    async_id = await awaits_cancelled.enqueue()
    sync_id = await sync_cancelled.enqueue()
    async with running(app):
        await until(lambda: _in(app, async_id, Pillar.DLQ))
        await until(lambda: _in(app, sync_id, Pillar.DLQ))
    for job_id in (async_id, sync_id):
        view = await app.backend.job_get(job_id)
        assert view is not None and view.failure_reason is FailureReason.TRANSIENT
        assert view.attempt_count == 3
        assert "CancelledError" in (view.error or "")
    assert runs == [1, 2, 3]


async def test_fatal_error_keeps_its_stack_trace(make_app: Callable[..., App]) -> None:
    app = make_app()

    @app.job()
    async def poison(order: int) -> None:
        raise FatalError(f"order {order} cannot be parsed")

    await app.open()
    job_id = await poison.enqueue(order=7)
    await app.run_worker(burst=True)
    view = await app.backend.job_get(job_id)
    assert view is not None and view.error is not None
    assert "Traceback" in view.error and "order 7 cannot be parsed" in view.error
    # The first line names the exception: the DLQ groups error families on it.
    assert view.error.splitlines()[0] == "chokaq.errors.FatalError: order 7 cannot be parsed"
    [family] = await app.backend.dlq_top_errors()
    assert family.family == "chokaq.errors.FatalError: order <n> cannot be parsed"


async def test_throttled_retry_after_is_honoured_exactly(make_app: Callable[..., App]) -> None:
    app = make_app()
    starts: list[datetime] = []

    @app.job()
    async def partner() -> None:
        starts.append(datetime.now(UTC))
        if len(starts) == 1:
            raise ThrottledError("slow down", retry_after_seconds=0.5)

    await app.open()
    job_id = await partner.enqueue()
    async with running(app):
        await until(lambda: _in(app, job_id, Pillar.ARCHIVE))
    assert timedelta(seconds=0.5) <= starts[1] - starts[0] < timedelta(seconds=1.5)


async def test_a_named_retry_delay_is_honoured_past_the_policys_max_delay(
    make_app: Callable[..., App],
) -> None:
    # Issue 32: Retry(after_seconds=7200) and ThrottledError(retry_after_seconds=7200) were
    # scheduled 3600 s ahead (the policy's max_delay_seconds) although the docs said "exactly".
    app = make_app(retry=RetryPolicy(max_attempts=3, jitter_seconds=0))  # max_delay 3600

    @app.job()
    async def later() -> Retry:
        return Retry(after_seconds=7200)

    @app.job()
    async def partner() -> None:
        raise ThrottledError("429", retry_after_seconds=7200)

    @app.job()
    async def never() -> Retry:
        return Retry(after_seconds=400 * 86400)

    await app.open()
    before = datetime.now(UTC)
    ids = [await later.enqueue(), await partner.enqueue(), await never.enqueue()]

    async def settled() -> bool:
        views = [await app.backend.job_get(i) for i in ids]
        return all(v is not None and v.attempt_count == 1 for v in views[:2]) and (
            await _in(app, ids[2], Pillar.DLQ)
        )

    async with running(app):
        await until(settled)
    after = datetime.now(UTC)
    for job_id in ids[:2]:
        view = await app.backend.job_get(job_id)
        assert view is not None and view.pillar is Pillar.HOT and view.scheduled_at is not None
        assert before + timedelta(seconds=7200) <= view.scheduled_at
        assert view.scheduled_at <= after + timedelta(seconds=7200)
    dead = await app.backend.job_get(ids[2])
    assert dead is not None and dead.failure_reason is FailureReason.FATAL_ERROR
    assert "Not retried: Retry.after_seconds: must be at most 31622400 seconds" in (
        dead.error or ""
    )


async def test_lifetime_expiry_stops_retries(make_app: Callable[..., App]) -> None:
    app = make_app(
        retry=RetryPolicy(
            max_attempts=5, base_delay_seconds=5, jitter_seconds=0, max_job_age_seconds=2
        )
    )

    @app.job()
    async def stale() -> None:
        raise RuntimeError("downstream gone")

    await app.open()
    job_id = await stale.enqueue()
    async with running(app):
        await until(lambda: dlq_reason_is(app, job_id, FailureReason.RETRY_LIFETIME_EXPIRED))


async def dlq_reason_is(app: App, job_id: str, reason: FailureReason) -> bool:
    return await dlq_reason(app, job_id) is reason


async def test_an_open_circuit_defers_jobs_without_consuming_attempts(
    make_app: Callable[..., App],
) -> None:
    app = make_app(
        circuit=CircuitPolicy(threshold=2, break_seconds=60),
        retry=RetryPolicy(max_attempts=1),
    )

    @app.job()
    async def gateway(n: int) -> None:
        raise TimeoutError("gateway down")

    await app.open()
    first = [await gateway.enqueue(n=i) for i in range(2)]
    async with running(app, concurrency=1) as worker:
        for job_id in first:
            await until(lambda job_id=job_id: _in(app, job_id, Pillar.DLQ))
        assert worker.circuits.blocked() == ["gateway"]
        later = await gateway.enqueue(n=99)
        await asyncio.sleep(0.3)  # give the worker a few polls: it must not take the job
        view = await app.backend.job_get(later)
        assert view is not None and view.pillar is Pillar.HOT
        assert view.status is JobStatus.PENDING and view.attempt_count == 0
        snapshot = worker.circuits.snapshot()[0]
        assert snapshot.state.value == "open" and snapshot.failures == 2


async def test_a_running_job_is_cancelled_from_another_connection(
    make_app: Callable[..., App],
) -> None:
    app = make_app()
    operator = make_app()  # a second App: its own connections, like another process
    started = asyncio.Event()

    @app.job()
    async def long_task(ctx: JobContext) -> None:
        started.set()
        await asyncio.sleep(30)

    await app.open()
    await operator.open()
    job_id = await long_task.enqueue()
    async with running(app):
        await asyncio.wait_for(started.wait(), 10)
        result = await operator.backend.jobs_cancel(ids=[job_id], actor="alice")
        assert result.requested == (job_id,)
        await until(lambda: _in(app, job_id, Pillar.DLQ), timeout=10)
    view = await app.backend.job_get(job_id)
    assert view is not None and view.failure_reason is FailureReason.CANCELLED
    assert view.cancelled_by == "alice"


async def test_sync_handler_sees_the_cancel_flag(make_app: Callable[..., App]) -> None:
    app = make_app()
    observed = threading.Event()

    @app.job()
    def cooperative(ctx: JobContext) -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if ctx.cancel_requested:
                observed.set()
                return
            time.sleep(0.01)

    await app.open()
    job_id = await cooperative.enqueue()
    async with running(app):
        await until(lambda: _status_is(app, job_id, JobStatus.PROCESSING))
        await app.backend.jobs_cancel(ids=[job_id], actor="bob")
        await until(lambda: _in(app, job_id, Pillar.DLQ))
    assert observed.wait(5)


async def _status_is(app: App, job_id: str, status: JobStatus) -> bool:
    view = await app.backend.job_get(job_id)
    return view is not None and view.status is status


async def test_progress_is_stored_and_visible_while_running(make_app: Callable[..., App]) -> None:
    app = make_app()
    release = asyncio.Event()

    @app.job()
    async def report(ctx: JobContext) -> None:
        ctx.report_progress(40)
        await release.wait()

    await app.open()
    job_id = await report.enqueue()
    async with running(app):

        async def shows_progress() -> bool:
            view = await app.backend.job_get(job_id)
            return view is not None and view.progress == 40

        await until(shows_progress)
        release.set()
        await until(lambda: _in(app, job_id, Pillar.ARCHIVE))


async def test_middleware_wraps_in_registration_order(make_app: Callable[..., App]) -> None:
    app = make_app()
    trail: list[str] = []

    @app.middleware
    async def outer(ctx: JobContext, call_next):  # type: ignore[no-untyped-def]
        trail.append(f"outer>{ctx.type}:{ctx.attempt}")
        result = await call_next()
        trail.append("outer<")
        return result

    @app.middleware
    async def inner(ctx: JobContext, call_next):  # type: ignore[no-untyped-def]
        trail.append("inner>")
        result = await call_next()
        trail.append("inner<")
        return result

    @app.job()
    async def handler() -> None:
        trail.append("handler")

    await app.open()
    await handler.enqueue()
    await app.run_worker(burst=True)
    assert trail == ["outer>handler:1", "inner>", "handler", "inner<", "outer<"]


async def test_pipe_handler_receives_type_and_raw_payload(make_app: Callable[..., App]) -> None:
    app = make_app()
    received: list[tuple[str, str, str]] = []

    @app.pipe("events")
    async def sink(type: str, payload: str, ctx: JobContext) -> None:
        received.append((type, payload, ctx.queue))

    await app.open()
    await app.enqueue_raw("user.signed_up", '{"id": 1}', queue="events")
    await app.enqueue_raw("user.deleted", {"id": 2}, queue="events")
    await app.run_worker(burst=True)
    assert sorted(received) == [
        ("user.deleted", '{"id":2}', "events"),
        ("user.signed_up", '{"id": 1}', "events"),
    ]


async def test_enqueue_checks_arguments_and_options_before_writing(
    make_app: Callable[..., App],
) -> None:
    app = make_app()

    @app.job(queue="emails")
    async def send_email(to: str, subject: str) -> None: ...

    await app.open()
    with pytest.raises(ValidationError, match="missing a required argument: 'subject'"):
        await send_email.enqueue(to="a@b.c")
    with pytest.raises(ValidationError, match="unexpected keyword argument 'cc'"):
        await send_email.enqueue(to="a@b.c", subject="hi", cc="x")
    with pytest.raises(ValidationError, match=r"arguments\.to: must be a str, not object"):
        await send_email.enqueue(to=object(), subject="hi")
    with pytest.raises(ValidationError) as info:
        await send_email.enqueue(to="a", subject="b", priority=10**9)
    assert info.value.field == "priority"
    page = await app.backend.jobs_page(pillar=Pillar.HOT)
    assert page.total == 0


async def test_max_attempts_is_limited_at_decoration_and_at_enqueue(
    make_app: Callable[..., App],
) -> None:
    app = make_app()
    limit = "max_attempts: must be an integer between 1 and 1000"
    for bad in (10**9, 1001, 0, True, 2.5):
        with pytest.raises(ValidationError, match=limit) as info:

            @app.job(max_attempts=bad)  # type: ignore[arg-type]
            async def greedy() -> None: ...

        assert info.value.field == "max_attempts"
        with pytest.raises(ValidationError, match=limit):
            app.pipe("raw", max_attempts=bad)  # type: ignore[arg-type]
    assert "greedy" not in app.handlers and "raw" not in app.pipes

    @app.job(max_attempts=1000)
    async def patient() -> None: ...

    await app.open()
    with pytest.raises(ValidationError, match=limit):
        await patient.enqueue(max_attempts=10**9)
    assert (await app.backend.jobs_page(pillar=Pillar.HOT)).total == 0
    assert not (await patient.enqueue(max_attempts=1000)).duplicate


async def test_enqueue_options_and_duplicates(make_app: Callable[..., App]) -> None:
    app = make_app()

    @app.job(queue="emails", max_attempts=5, timeout=30)
    async def send_email(to: str, subject: str) -> None: ...

    await app.open()
    first = await send_email.enqueue(
        to="a@b.c",
        subject="hi",
        priority=20,
        delay=60,
        idempotency_key="welcome:42",
        tags=["signup"],
        created_by="signup-service",
    )
    again = await send_email.enqueue(to="a@b.c", subject="hi", idempotency_key="welcome:42")
    assert not first.duplicate and again.duplicate and again == first
    view = await app.backend.job_get(first)
    assert view is not None
    assert (view.queue, view.priority, view.tags, view.created_by) == (
        "emails",
        20,
        ("signup",),
        "signup-service",
    )
    assert view.scheduled_at is not None and view.scheduled_at > datetime.now(UTC)
    sync_id = await asyncio.to_thread(send_email.enqueue_sync, to="x@y.z", subject="sync")
    assert await pillar_of(app, sync_id) is Pillar.HOT


async def test_burst_leaves_delayed_jobs_for_later(make_app: Callable[..., App]) -> None:
    app = make_app()

    @app.job()
    async def later() -> None: ...

    await app.open()
    await later.enqueue(delay=3600)
    now_id = await later.enqueue()
    await asyncio.wait_for(app.run_worker(burst=True), timeout=10)
    assert await pillar_of(app, now_id) is Pillar.ARCHIVE
    assert (await app.backend.stats_summary()).pending == 1


async def test_concurrency_changes_at_runtime_without_interrupting_work(
    make_app: Callable[..., App],
) -> None:
    app = make_app()
    gate = asyncio.Event()
    in_flight = 0
    peak = 0

    @app.job()
    async def hold(i: int) -> None:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await gate.wait()
        in_flight -= 1

    await app.open()
    await hold.enqueue_many([{"i": i} for i in range(6)])

    async def holding(n: int) -> bool:
        # A claimed job is Processing in the store (and in ``worker.running``) a scheduling
        # step before its handler's first line runs: wait for both, not the row alone.
        return await _count(app, JobStatus.PROCESSING, n) and in_flight == n

    async with running(app, concurrency=2) as worker:
        await until(lambda: holding(2))
        worker.set_concurrency(4)
        await until(lambda: holding(4))
        worker.set_concurrency(1)  # running jobs keep running

        async def scaled_down() -> bool:
            # The worker's row, beaten after the change: the scale-down has landed.
            rows = {w.id: w for w in await app.backend.workers_list()}
            row = rows.get(worker.id)
            return row is not None and row.concurrency == 1

        await until(scaled_down)
        assert in_flight == 4
        assert await _count(app, JobStatus.PROCESSING, 4)
        gate.set()
        await until(lambda: _archived(app, 6))
    assert peak == 4


async def _count(app: App, status: JobStatus, n: int) -> bool:
    page = await app.backend.jobs_page(pillar=Pillar.HOT, filter=JobFilter(status=status))
    return page.total == n


async def _archived(app: App, n: int) -> bool:
    return (await app.backend.stats_summary()).succeeded_total == n


async def test_operators_ask_a_worker_to_change_concurrency(make_app: Callable[..., App]) -> None:
    app = make_app()
    await app.open()
    async with running(app, concurrency=3) as worker:

        async def registered() -> bool:
            return any(w.id == worker.id for w in await app.backend.workers_list())

        await until(registered)
        await app.backend.worker_request(worker_id=worker.id, concurrency=7)

        async def changed() -> bool:
            return worker.concurrency == 7

        await until(changed)


async def test_shutdown_interrupts_after_the_grace_period_and_requeues(
    make_app: Callable[..., App],
) -> None:
    app = make_app(shutdown_grace_seconds=0.2)
    started = asyncio.Event()

    @app.job()
    async def endless() -> None:
        started.set()
        await asyncio.sleep(60)

    await app.open()
    job_id = await endless.enqueue()
    worker = app.create_worker()
    task = asyncio.create_task(worker.run())
    await asyncio.wait_for(started.wait(), 10)
    worker.stop()
    await asyncio.wait_for(task, 10)
    view = await app.backend.job_get(job_id)
    assert view is not None and view.pillar is Pillar.HOT and view.status is JobStatus.PENDING
    assert view.attempt_count == 1  # the interrupted execution counts as an attempt
    assert view.last_error is not None and "Shutdown" in view.last_error


async def test_a_job_that_always_outlives_the_grace_period_runs_only_max_attempts_times(
    make_app: Callable[..., App],
) -> None:
    # Each shutdown interrupts it and counts the execution; once it has used its last
    # attempt, the interruption dead-letters it instead of giving it back (it used to be
    # requeued for ever: attempt 5 of max 2, still pending).
    app = make_app(shutdown_grace_seconds=0.1)
    attempts: list[int] = []
    started = asyncio.Event()

    @app.job(max_attempts=2)
    async def endless(ctx: JobContext) -> None:
        attempts.append(ctx.attempt)
        started.set()
        await asyncio.sleep(60)

    await app.open()
    job_id = await endless.enqueue()
    for expected in (1, 2):
        started.clear()
        worker = app.create_worker()
        task = asyncio.create_task(worker.run())
        await asyncio.wait_for(started.wait(), 10)
        worker.stop()
        await asyncio.wait_for(task, 10)
        view = await app.backend.job_get(job_id)
        assert view is not None and view.attempt_count == expected
    assert view.pillar is Pillar.DLQ
    assert view.failure_reason is FailureReason.MAX_RETRIES_EXCEEDED
    assert view.error is not None and view.error.startswith("Attempts exhausted (2 of 2): Shutdown")
    await asyncio.wait_for(app.create_worker(burst=True).run(), 30)  # nothing left to run
    assert attempts == [1, 2]
    summary = await app.backend.stats_summary()
    assert (summary.failed_total, summary.retried_total) == (1, 0)


async def test_a_worker_that_lost_its_lease_cannot_record_an_outcome(
    make_app: Callable[..., App],
) -> None:
    # The worker's heartbeats are slow and rescue runs elsewhere: the job is declared a zombie,
    # and when the stale worker finishes, its success is refused by the lease fence.
    app = make_app(
        heartbeat_min_seconds=30,
        heartbeat_max_seconds=31,
        zombie_timeout_seconds=60,
        rescue_interval_seconds=3600,
    )
    release = asyncio.Event()

    @app.job()
    async def slow() -> None:
        await release.wait()

    await app.open()
    job_id = await slow.enqueue()
    async with running(app):
        await until(lambda: _status_is(app, job_id, JobStatus.PROCESSING))
        rescue = await app.backend.jobs_rescue(
            fetched_timeout_seconds=60,
            processing_timeout_seconds=60,
            now=datetime.now(UTC) + timedelta(seconds=120),
        )
        assert rescue.zombies == (job_id,)
        release.set()
        await asyncio.sleep(0.3)
    view = await app.backend.job_get(job_id)
    assert view is not None and view.pillar is Pillar.DLQ
    assert view.failure_reason is FailureReason.ZOMBIE
    summary = await app.backend.stats_summary()
    assert (summary.succeeded_total, summary.failed_total) == (0, 1)


async def test_enqueue_many_of_prepared_jobs_is_one_call(make_app: Callable[..., App]) -> None:
    app = make_app()

    @app.job()
    async def a(x: int) -> None: ...

    await app.open()
    ids = await app.enqueue_many(
        [a.prepare(x=1), a.prepare(x=2, queue="other"), NewJob(type="raw", payload="[]")]
    )
    assert len(set(ids)) == 3
    queues = {q.queue.name for q in await app.backend.stats_queues()}
    assert {"default", "other"} <= queues


def test_prepare_gives_the_same_job_by_its_short_and_long_paths() -> None:
    # Keyword arguments without options take a short path; positional ones are bound to the
    # signature. Both must give the same job, and a misfit must be refused either way.
    app = App("sqlite:///unused.db")

    @app.job(queue="mail", priority=5)
    async def send(to: str, retries: int = 0) -> None: ...

    short = send.prepare(to="a@b", retries=2)
    long = send.prepare("a@b", 2)
    assert short.id and long.id and short.id != long.id  # each gets its own id up front
    assert dataclasses.replace(short, id=None) == dataclasses.replace(long, id=None)
    assert dataclasses.replace(short, id=None) == NewJob(
        type=send.name, payload='{"to":"a@b","retries":2}', queue="mail", priority=5
    )
    for wrong in ({"to": "a@b", "cc": "x"}, {"retries": 1}):
        with pytest.raises(ValidationError) as caught:
            send.prepare(**wrong)
        assert caught.value.field == "arguments"


async def test_failing_heartbeats_cancel_the_job_when_asked(make_app: Callable[..., App]) -> None:
    # The storage refuses every heartbeat (as during a partial outage) while finalizing still
    # works: with cancel_on_heartbeat_failure the job stops and lands in the DLQ as such.
    app = make_app(cancel_on_heartbeat_failure=True, heartbeat_failure_threshold=2)
    started = asyncio.Event()

    @app.job()
    async def long_running() -> None:
        started.set()
        await asyncio.sleep(30)

    await app.open()
    backend = app.backend

    async def refuse(**kwargs: object) -> list[object]:
        from chokaq.errors import StorageUnavailableError

        raise StorageUnavailableError("heartbeat refused (injected)")

    backend.jobs_heartbeat = refuse  # type: ignore[method-assign,assignment]
    job_id = await long_running.enqueue()
    async with running(app):
        await asyncio.wait_for(started.wait(), 10)
        await until(lambda: dlq_reason_is(app, job_id, FailureReason.HEARTBEAT_FAILURE))


async def test_claimed_jobs_start_before_the_next_claim_is_sent(
    make_app: Callable[..., App],
) -> None:
    # Pickup latency: a claim that returned jobs is followed by another (more may be waiting),
    # and sending a statement can cost a server wake-up. The handlers must get to run first.
    app = make_app()
    order: list[str] = []

    @app.job()
    async def first_step(i: int) -> None:
        order.append(f"handler {i}")

    await app.open()
    backend = app.backend
    fetch = backend.jobs_claim

    async def recorded(**kwargs: object) -> object:
        order.append("claim sent")
        got = await fetch(**kwargs)  # type: ignore[arg-type]
        order.append(f"claimed {len(got.jobs)}")
        return got

    backend.jobs_claim = recorded  # type: ignore[method-assign,assignment]
    await first_step.enqueue_many([{"i": 1}, {"i": 2}])
    await app.run_worker(burst=True, concurrency=5)
    at = order.index("claimed 2")
    assert sorted(order[at + 1 : at + 3]) == ["handler 1", "handler 2"], order
    assert order[at + 3] == "claim sent", order


async def test_a_requeued_job_knows_it_ran_before_and_why_it_failed(
    make_app: Callable[..., App],
) -> None:
    app = make_app(retry=RetryPolicy(max_attempts=2, base_delay_seconds=0.01, jitter_seconds=0))
    seen: list[tuple[int, int, bool, str | None]] = []

    @app.job()
    async def charge(ctx: JobContext) -> None:
        seen.append((ctx.attempt, ctx.requeues, ctx.requeued, ctx.previous_error))
        if ctx.requeues < 2:
            raise ConnectionError(f"declined: attempt {ctx.attempt}, requeue {ctx.requeues}")

    await app.open()
    job_id = await charge.enqueue()
    async with running(app):
        for requeues in range(3):
            if requeues:  # as an operator does from The Deck or chokaq dlq requeue
                await until(lambda: _in(app, job_id, Pillar.DLQ))
                assert await app.backend.dlq_resurrect(ids=[job_id], actor="ops") == [job_id]
            await until(lambda requeues=requeues: _ran(seen, requeues))
        await until(lambda: _in(app, job_id, Pillar.ARCHIVE))
    assert [(a, r, q) for a, r, q, _ in seen] == [
        (1, 0, False),
        (2, 0, False),
        (1, 1, True),
        (2, 1, True),
        (1, 2, True),
    ]
    errors = [e for *_, e in seen]
    assert errors[0] is None  # the very first run
    assert errors[1] is not None and "declined: attempt 1, requeue 0" in errors[1]
    # The first run after a requeue reads the error the job was dead-lettered with.
    assert errors[2] is not None and errors[2].startswith("Attempts exhausted (2 of 2)")
    assert "declined: attempt 2, requeue 0" in errors[2]
    assert errors[3] is not None and "declined: attempt 1, requeue 1" in errors[3]
    assert errors[4] is not None and "declined: attempt 2, requeue 1" in errors[4]


async def _ran(seen: list[tuple[int, int, bool, str | None]], requeues: int) -> bool:
    return any(r == requeues for _, r, _, _ in seen)
