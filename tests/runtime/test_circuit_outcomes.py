"""Which outcomes count against a job type's circuit breaker, on both backends.

A circuit guards a failing dependency: failures about the job's own data (``FatalError``,
``Fail``, a configured fatal type, a rejected payload) must not open it, or a batch of poison
jobs would hold every good job of the type back.
"""

from __future__ import annotations

from collections.abc import Callable

from chokaq import App, CircuitPolicy, Fail, FailureReason, FatalError, Retry, RetryPolicy
from chokaq.models import Pillar

from .conftest import running, until


async def _all_dead(app: App, ids: list[str], reason: FailureReason) -> bool:
    for job_id in ids:
        view = await app.backend.job_get(job_id)
        if view is None or view.pillar is not Pillar.DLQ or view.failure_reason is not reason:
            return False
    return True


async def test_poison_jobs_do_not_open_the_circuit(make_app: Callable[..., App]) -> None:
    app = make_app(
        circuit=CircuitPolicy(threshold=2, break_seconds=600),
        retry=RetryPolicy(max_attempts=1),
        fatal_exceptions=(KeyError,),
    )

    @app.job()
    async def charge(n: int) -> Fail | None:
        if n % 3 == 0:
            raise FatalError(f"order {n} is malformed")
        if n % 3 == 1:
            raise KeyError(n)
        return Fail(f"order {n} refused")

    await app.open()
    fatal = [await charge.enqueue(n=i) for i in range(9)]
    # A payload that does not fit the handler's signature is rejected: about the data too.
    rejected = [await app.enqueue_raw("charge", '{"wrong": 1}') for _ in range(3)]
    async with running(app, concurrency=1) as worker:
        await until(lambda: _all_dead(app, fatal, FailureReason.FATAL_ERROR))
        await until(lambda: _all_dead(app, rejected, FailureReason.REJECTED))
        assert worker.circuits.blocked() == []
        assert all(c.state.value == "closed" for c in worker.circuits.snapshot())


async def test_dependency_failures_still_open_the_circuit(make_app: Callable[..., App]) -> None:
    app = make_app(
        circuit=CircuitPolicy(threshold=2, break_seconds=600),
        retry=RetryPolicy(max_attempts=1),
    )

    @app.job()
    async def gateway(n: int) -> None:
        raise ConnectionError("gateway down")

    await app.open()
    ids = [await gateway.enqueue(n=i) for i in range(2)]
    async with running(app, concurrency=1) as worker:
        await until(lambda: _all_dead(app, ids, FailureReason.TRANSIENT))
        assert worker.circuits.blocked() == ["gateway"]


async def test_a_returned_retry_does_not_count_against_the_circuit(
    make_app: Callable[..., App],
) -> None:
    # A handler that defers itself (Celery's self.retry(countdown=...)) is not failing: its
    # retries and the MAX_RETRIES_EXCEEDED they end in must not open the type's circuit.
    app = make_app(circuit=CircuitPolicy(threshold=2, break_seconds=600))

    @app.job(max_attempts=3)
    async def poll_export(n: int) -> Retry:
        return Retry(after_seconds=0.01, reason="export not ready yet")

    await app.open()
    ids = [await poll_export.enqueue(n=i) for i in range(4)]
    async with running(app, concurrency=2) as worker:
        await until(lambda: _all_dead(app, ids, FailureReason.MAX_RETRIES_EXCEEDED))
        assert worker.circuits.blocked() == []
        assert all(c.failures == 0 for c in worker.circuits.snapshot())
    assert (await app.backend.stats_summary()).retried_total == 8
