"""Expiry and uniqueness windows per enqueue, on both backends, through the public API with real
burst workers: ``expires_at`` / ``expires_after_seconds`` (not started by then: the DLQ as
EXPIRED, counted and bucketed, whether a worker claims the job or the rescue pass finds it) and
``unique_for_seconds`` (the key names the first job until the window ends, even after it
finished), and the bad values each is refused with before anything is written."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from chokaq import App, FailureReason, JobView, Pillar, RetryPolicy, ValidationError
from chokaq.metrics import WorkerMetrics
from chokaq.models import JobFilter


async def view(app: App, job_id: str) -> JobView:
    found = await app.get_job(job_id)
    assert found is not None, job_id
    return found


async def burst(app: App) -> None:
    await asyncio.wait_for(app.create_worker(burst=True).run(), timeout=30)


async def test_a_job_not_started_by_its_expiry_is_dead_lettered_not_run(
    make_app: Callable[..., App],
) -> None:
    app = make_app()
    ran: list[int] = []

    @app.job()
    async def report(n: int) -> None:
        ran.append(n)

    await app.open()
    # Enqueued on a clock a minute back, due then and expiring a second ago (an expiry in the
    # past is refused at enqueue).
    past = datetime.now(UTC) - timedelta(seconds=1)
    [written] = await app.backend.jobs_enqueue(
        [report.options(expires_at=past).prepare(n=1)], now=past - timedelta(minutes=1)
    )
    late = written.id
    fresh = await report.options(expires_after_seconds=3600).enqueue(n=2)
    plain = await report.enqueue(n=3)
    assert (await view(app, fresh)).expires_at is not None
    assert (await view(app, plain)).expires_at is None
    worker = app.create_worker(burst=True)
    metrics = WorkerMetrics()
    metrics.attach(worker)
    await asyncio.wait_for(worker.run(), timeout=30)

    assert sorted(ran) == [2, 3]  # the expired one never ran
    dead = await view(app, late)
    assert (dead.pillar, dead.failure_reason) == (Pillar.DLQ, FailureReason.EXPIRED)
    assert dead.attempt_count == 0
    assert dead.error is not None and dead.error.startswith("Expired: not started by ")
    assert past.strftime("%Y-%m-%d %H:%M:%S") in dead.error
    # Counted and bucketed as any failure is.
    summary = await app.backend.stats_summary()
    assert (summary.succeeded_total, summary.failed_total) == (2, 1)
    throughput = await app.backend.stats_throughput()
    assert throughput.failed_5m == 1
    # Buried by the worker's first claim, or by its rescue pass if that ran first: counted once.
    exposition = metrics.render().decode()
    claimed = 'chokaq_jobs_dlq_total{queue="default",reason="EXPIRED",type="report"} 1.0'
    rescued = "chokaq_expired_rescued_total 1.0"
    assert (claimed in exposition) != (rescued in exposition), exposition
    page = await app.backend.jobs_page(
        pillar=Pillar.DLQ, filter=JobFilter(failure_reason=FailureReason.EXPIRED)
    )
    assert [j.id for j in page.items] == [late]


async def test_the_rescue_pass_dead_letters_expired_jobs_nobody_claims(
    make_app: Callable[..., App],
) -> None:
    app = make_app()

    @app.job(queue="reports")
    async def report(n: int) -> None: ...

    await app.open()
    await app.backend.queue_pause(name="reports", paused=True, actor="test")
    soon = await report.options(expires_after_seconds=60).enqueue(n=1)
    later = await report.options(expires_after_seconds=600).enqueue(n=2)
    # Two minutes on: the first is past its expiry, the second is not.
    moment = datetime.now(UTC) + timedelta(seconds=120)
    rescued = await app.backend.jobs_rescue(
        fetched_timeout_seconds=60, processing_timeout_seconds=60, now=moment
    )
    assert rescued.expired == (soon,)
    assert (await view(app, soon)).failure_reason is FailureReason.EXPIRED
    assert (await view(app, later)).pillar is Pillar.HOT
    assert (await app.backend.stats_summary()).failed_total == 1


async def test_a_retry_of_a_job_that_started_is_not_cut_short_by_its_expiry(
    make_app: Callable[..., App],
) -> None:
    app = make_app(retry=RetryPolicy(max_attempts=3, base_delay_seconds=0, jitter_seconds=0))
    attempts: list[int] = []

    @app.job()
    async def flaky() -> None:
        attempts.append(1)
        if len(attempts) == 1:
            raise ConnectionError("once")

    await app.open()
    job_id = await flaky.options(expires_after_seconds=3600).enqueue()
    await burst(app)
    assert len(attempts) == 2
    assert (await view(app, job_id)).pillar is Pillar.ARCHIVE


async def test_a_key_unique_for_a_window_names_the_first_job_even_after_it_finished(
    make_app: Callable[..., App],
) -> None:
    app = make_app()
    ran: list[str] = []

    @app.job()
    async def digest(user: str) -> None:
        ran.append(user)

    await app.open()
    hourly = digest.options(idempotency_key="digest:ann", unique_for_seconds=3600)
    first = await hourly.enqueue(user="ann")
    assert not first.duplicate
    await burst(app)
    assert (await view(app, first)).pillar is Pillar.ARCHIVE
    again = await hourly.enqueue(user="ann")
    assert again == first and again.duplicate
    # The plain key alone guards only while its job is in hot: that one is finished.
    other = await digest.options(idempotency_key="digest:bob").enqueue(user="bob")
    await burst(app)
    bob = await digest.options(idempotency_key="digest:bob").enqueue(user="bob")
    assert bob != other and not bob.duplicate
    await burst(app)
    assert ran == ["ann", "bob", "bob"]
    # A window over (forgotten by retention) lets the key open a new one.
    assert await app.backend.unique_keys_tidy(older_than=datetime.now(UTC) + timedelta(hours=2))
    fresh = await hourly.enqueue(user="ann")
    assert fresh != first and not fresh.duplicate


async def test_a_batch_shares_one_window_per_key(make_app: Callable[..., App]) -> None:
    app = make_app()

    @app.job()
    async def digest(user: str) -> None: ...

    await app.open()
    ids = await digest.options(idempotency_key="k", unique_for_seconds=60).enqueue_many(
        [{"user": "a"}, {"user": "b"}]
    )
    assert ids[0] == ids[1] and ids[1].duplicate and not ids[0].duplicate
    assert (await app.backend.stats_summary()).pending == 1


@pytest.mark.parametrize(
    ("options", "field", "words"),
    [
        ({"unique_for_seconds": 60}, "unique_for_seconds", "needs an idempotency_key"),
        ({"unique_for_seconds": 0, "idempotency_key": "k"}, "unique_for_seconds", "greater than 0"),
        ({"expires_after_seconds": -1}, "expires_after_seconds", "greater than 0"),
        ({"expires_after_seconds": float("inf")}, "expires_after_seconds", "finite"),
        (
            {"expires_after_seconds": 5, "expires_at": datetime(2030, 1, 1, tzinfo=UTC)},
            "expires_after_seconds",
            "not both",
        ),
        ({"expires_after_seconds": 30, "delay_seconds": 60}, "expires_after_seconds", "never"),
        ({"expires_at": datetime(2030, 1, 1)}, "expires_at", "timezone-aware"),
        (
            {
                "expires_at": datetime.now(UTC) + timedelta(hours=1),
                "run_at": datetime.now(UTC) + timedelta(hours=2),
            },
            "expires_at",
            "after run_at",
        ),
    ],
)
async def test_bad_expiry_and_windows_are_refused_before_anything_is_written(
    make_app: Callable[..., App], options: dict[str, object], field: str, words: str
) -> None:
    app = make_app()

    @app.job()
    async def digest(user: str) -> None: ...

    await app.open()
    with pytest.raises(ValidationError) as caught:
        await digest.options(**options).enqueue(user="a")  # type: ignore[arg-type]
    assert caught.value.field == field and words in str(caught.value)
    assert (await app.backend.stats_summary()).pending == 0
