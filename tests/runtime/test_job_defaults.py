"""App-wide job defaults (``App(job_defaults=...)``) and a type's own expiry
(``@app.job(expires_after_seconds=...)``), on both backends with real burst workers: the
precedence enqueue > type > app > built-in, each default reaching the stored job or the
worker's decision, and every bad value refused naming its field before anything is written."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from chokaq import App, FailureReason, JobDefaults, JobView, Pillar, RetryPolicy, ValidationError

FAST_RETRY = RetryPolicy(max_attempts=4, base_delay_seconds=0, jitter_seconds=0)


async def view(app: App, job_id: str) -> JobView:
    found = await app.get_job(job_id)
    assert found is not None, job_id
    return found


async def burst(app: App) -> None:
    await asyncio.wait_for(app.create_worker(burst=True, queues=("*",)).run(), timeout=60)


async def test_queue_and_priority_resolve_enqueue_then_type_then_app_then_built_in(
    make_app: Callable[..., App],
) -> None:
    app = make_app(job_defaults={"queue": "mail", "priority": 40})
    plain = App("sqlite:///:memory:")  # no defaults: the built-in ones

    @app.job
    def by_app() -> None: ...

    @app.job(queue="bulk", priority=-3)
    def by_type() -> None: ...

    @plain.job
    def built_in() -> None: ...

    assert (by_app.queue, by_app.priority) == ("mail", 40)
    assert (by_type.queue, by_type.priority) == ("bulk", -3)
    assert (built_in.queue, built_in.priority) == ("default", 10)
    ids = [
        await by_app.enqueue(),
        await by_type.enqueue(),
        await by_app.options(queue="now", priority=0).enqueue(),
        await app.enqueue_raw("piped", "{}"),
    ]
    seen = [(v.queue, v.priority) for v in [await view(app, i) for i in ids]]
    assert seen == [("mail", 40), ("bulk", -3), ("now", 0), ("mail", 40)]


async def test_attempts_retry_policy_and_timeout_come_from_the_app_unless_the_type_sets_them(
    make_app: Callable[..., App],
) -> None:
    app = make_app(job_defaults=JobDefaults(max_attempts=2, retry=FAST_RETRY, timeout_seconds=0.3))
    never = asyncio.Event()

    @app.job
    def fails_by_app() -> None:
        raise RuntimeError("boom")

    @app.job(retry=RetryPolicy(max_attempts=3, base_delay_seconds=0, jitter_seconds=0))
    def fails_by_type_policy() -> None:
        raise RuntimeError("boom")

    @app.job
    async def hangs() -> None:
        await never.wait()

    # The type's own policy carries its attempts: the app's are below it.
    assert (fails_by_app.max_attempts, fails_by_type_policy.max_attempts) == (2, None)
    a = await fails_by_app.enqueue()
    b = await fails_by_type_policy.enqueue()
    c = await hangs.enqueue()
    await burst(app)
    first, second, third = await view(app, a), await view(app, b), await view(app, c)
    assert (first.pillar, first.attempt_count) == (Pillar.DLQ, 2)
    assert (second.pillar, second.attempt_count) == (Pillar.DLQ, 3)
    assert (third.pillar, third.failure_reason) == (Pillar.DLQ, FailureReason.TIMEOUT)


async def test_a_types_expiry_applies_to_every_enqueue_that_gives_none(
    make_app: Callable[..., App],
) -> None:
    app = make_app()
    ran: list[str] = []

    @app.job(expires_after_seconds=600)
    async def report(tag: str) -> None:
        ran.append(tag)

    await app.open()
    before = datetime.now(UTC)
    fresh = await view(app, await report.enqueue(tag="fresh"))
    assert fresh.expires_at is not None
    assert before + timedelta(seconds=599) <= fresh.expires_at
    assert fresh.expires_at <= datetime.now(UTC) + timedelta(seconds=601)
    own = await view(app, await report.options(expires_after_seconds=7200).enqueue(tag="own"))
    assert own.expires_at is not None and own.expires_at > before + timedelta(seconds=7000)
    at = datetime.now(UTC) + timedelta(days=2)
    fixed = await view(app, await report.options(expires_at=at).enqueue(tag="fixed"))
    assert fixed.expires_at is not None and abs((fixed.expires_at - at).total_seconds()) < 0.01
    # Enqueued on a clock an hour back: its type's 600 s have passed, so it never runs.
    [late] = await app.backend.jobs_enqueue(
        [report.prepare(tag="late")], now=datetime.now(UTC) - timedelta(hours=1)
    )
    await burst(app)
    assert sorted(ran) == ["fixed", "fresh", "own"]
    dead = await view(app, late.id)
    assert (dead.pillar, dead.failure_reason) == (Pillar.DLQ, FailureReason.EXPIRED)


@pytest.mark.parametrize(
    ("defaults", "field", "limit"),
    [
        ({"priority": 10**7}, "job_defaults.priority", "between -1000000 and 1000000"),
        ({"priority": "high"}, "job_defaults.priority", "must be an integer"),
        ({"queue": " "}, "job_defaults.queue", "blank"),
        ({"max_attempts": 0}, "job_defaults.max_attempts", "between 1 and 1000"),
        ({"max_attempts": 1001}, "job_defaults.max_attempts", "between 1 and 1000"),
        ({"retry": 3}, "job_defaults.retry", "RetryPolicy"),
        ({"timeout_seconds": 0}, "job_defaults.timeout_seconds", "greater than 0"),
        ({"timeout_seconds": 8 * 86400}, "job_defaults.timeout_seconds", "at most"),
        ({"timeout_seconds": float("nan")}, "job_defaults.timeout_seconds", "finite"),
        ({"expires_after_seconds": 5}, "job_defaults.expires_after_seconds", "not a job default"),
        ([("priority", 1)], "job_defaults", "a JobDefaults or a mapping"),
    ],
)
def test_bad_job_defaults_are_refused_naming_the_field(
    defaults: Any, field: str, limit: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        App("sqlite:///:memory:", job_defaults=defaults)
    assert caught.value.field == field
    assert limit in str(caught.value)


@pytest.mark.parametrize(
    ("value", "limit"),
    [(0, "greater than 0"), (-1, "greater than 0"), (400 * 86400, "at most"), ("1", "number")],
)
def test_a_bad_type_expiry_is_refused_at_decoration(value: Any, limit: str) -> None:
    app = App("sqlite:///:memory:")
    with pytest.raises(ValidationError) as caught:
        app.job(expires_after_seconds=value)
    assert caught.value.field == "expires_after_seconds"
    assert limit in str(caught.value)
    assert app.handlers == {}


async def test_a_type_expiry_shorter_than_an_enqueue_delay_is_refused_before_writing(
    make_app: Callable[..., App],
) -> None:
    app = make_app()

    @app.job(expires_after_seconds=60)
    async def report() -> None: ...

    await app.open()
    with pytest.raises(ValidationError) as caught:
        await report.options(delay_seconds=120).enqueue()
    assert caught.value.field == "expires_after_seconds"
    assert (await app.backend.stats_summary()).pending == 0
