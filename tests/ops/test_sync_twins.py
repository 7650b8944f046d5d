"""Every async client call has a sync twin (``get_job_sync``, ``wait_sync``, ...) that runs it on
the sync client, on both backends: each twin is driven here from plain sync code against a real
burst worker's results, bad input is refused as the async call refuses it, and a test lists the
async public methods of App and the handles so that a new one without a twin fails."""

from __future__ import annotations

import asyncio
import inspect

import pytest
from tests.conftest import Store

from chokaq import App, FailureReason, JobOptions, Pillar, ValidationError
from chokaq.handles import JobHandle

# Async methods that are no client call, so have no ``_sync`` twin: opening is what every twin
# does first on its own client; ``close_sync`` closes that client (``close`` the App's); a
# worker is run by ``chokaq worker`` (or ``asyncio.run(app.run_worker())``), not from sync code.
NO_TWIN = {"open", "close", "run_worker"}


def _app(store: Store) -> App:
    app = App(store.url, schema=store.schema, auto_migrate=True)

    @app.job
    def double(n: int) -> int:
        return 2 * n

    @app.job(max_attempts=1)
    def boom() -> None:
        raise ValueError("boom")

    return app


def _burst(store: Store) -> None:
    """Run every due job with a worker of its own App (the sync client's is another)."""

    async def run() -> None:
        async with _app(store) as worker_app:
            await asyncio.wait_for(worker_app.create_worker(burst=True).run(), timeout=60)

    asyncio.run(run())


@pytest.mark.parametrize("owner", [App, JobHandle, JobOptions])
def test_every_async_public_method_has_a_sync_twin(owner: type) -> None:
    async_methods = {
        name
        for name, fn in inspect.getmembers(owner, inspect.iscoroutinefunction)
        if not name.startswith("_")
    }
    missing = sorted(name for name in async_methods - NO_TWIN if not hasattr(owner, f"{name}_sync"))
    assert missing == [], f"{owner.__name__} lacks sync twins: {missing}"


def test_the_sync_twins_enqueue_read_wait_and_cancel(store: Store) -> None:
    app = _app(store)
    double, boom = app.handlers["double"], app.handlers["boom"]
    try:
        pair = double.enqueue_many_sync([{"n": 1}, {"n": 2}])
        urgent = double.options(priority=30).enqueue_many_sync([{"n": 3}])
        raw = app.enqueue_raw_sync("double", {"n": 4}, priority=5)
        failing = boom.enqueue_sync()
        later = double.options(delay_seconds=3600).enqueue_sync(n=5)
        parent = double.prepare(n=6)
        child = double.options(after=[parent], delay_seconds=3600).prepare(n=7)
        app.enqueue_many_sync([parent])
        app.enqueue_many_sync([child])
        waiting = app.get_job_sync(child.id or "")
        assert waiting is not None and waiting.state == "waiting"
        assert app.get_job_sync(urgent[0]).priority == 30  # type: ignore[union-attr]
        assert app.get_job_sync(raw).priority == 5  # type: ignore[union-attr]

        cancelled = app.cancel_sync(later)
        assert cancelled.cancelled == (later,)
        _burst(store)

        done = app.wait_sync(pair[0], timeout_seconds=30)
        assert done.pillar is Pillar.ARCHIVE and done.result == "2"
        assert [app.result_sync(i, timeout=30) for i in (*pair, *urgent, raw)] == [2, 4, 6, 8]
        dead = app.wait_sync(failing, timeout_seconds=30)
        assert (dead.pillar, dead.failure_reason) == (Pillar.DLQ, FailureReason.TRANSIENT)
        assert dead.error_type == "builtins.ValueError"
        view = app.get_job_sync(later)
        assert view is not None and view.failure_reason is FailureReason.CANCELLED
        flow = app.workflow_sync(parent.id or "")
        assert flow is not None and [j.state for j in flow.jobs] == ["succeeded", "pending"]
        stopped = app.cancel_workflow_sync(parent.id or "")
        assert stopped.cancelled == (child.id,)
        assert app.workflow_sync(parent.id or "").jobs[1].state == "failed"  # type: ignore[union-attr]
        assert app.get_job_sync("01890000-0000-7000-8000-000000000000") is None
        assert app.workflow_sync("01890000-0000-7000-8000-000000000000") is None
    finally:
        app.close_sync()


def test_the_sync_twins_refuse_bad_input_as_the_async_calls_do(store: Store) -> None:
    app = _app(store)
    double = app.handlers["double"]
    try:
        with pytest.raises(ValidationError) as caught:
            app.get_job_sync("not-an-id")
        assert caught.value.field == "id"
        with pytest.raises(ValidationError) as caught:
            app.wait_sync("01890000-0000-7000-8000-000000000000", timeout=1, timeout_seconds=1)
        assert caught.value.field == "timeout"
        with pytest.raises(ValidationError) as caught:
            double.enqueue_many_sync([{"n": 1}, {"n": "two"}])
        assert caught.value.field == "jobs[1].arguments.n"
        with pytest.raises(ValidationError) as caught:
            double.options(priority=10**9).enqueue_many_sync([{"n": 1}])
        assert caught.value.field == "priority"
        with pytest.raises(ValidationError) as caught:
            app.enqueue_raw_sync("double", b"{}")  # type: ignore[arg-type]
        assert caught.value.field == "payload"
        later = double.options(delay_seconds=3600).enqueue_sync(n=1)
        with pytest.raises(TimeoutError):
            app.wait_sync(later, timeout_seconds=0.2)  # due in an hour: it cannot finish
        assert len(app.cancel_sync(later).cancelled) == 1
    finally:
        app.close_sync()
