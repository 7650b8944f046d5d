"""Per-task retry policies, on both backends, through the public API with real burst workers:
``@app.job(retry=RetryPolicy(...), retry_on=(...), fatal_on=(...))`` over the worker's
settings, the precedence of attempts, an immediate retry (``base_delay_seconds=0``), options
refused at decoration, and the Celery port of docs/migrating-from-celery-rq.md run as written."""

from __future__ import annotations

import ast
import asyncio
import dataclasses
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from chokaq import (
    App,
    CircuitPolicy,
    FailureReason,
    FatalError,
    JobContext,
    JobView,
    Pillar,
    RetryPolicy,
    ThrottledError,
    ValidationError,
)

DOCS = Path(__file__).resolve().parents[2] / "docs"

# Every retry of the handlers below is due at once, so a burst worker drains them.
NOW = RetryPolicy(max_attempts=3, base_delay_seconds=0, jitter_seconds=0)
# The worker's own policy in tests that must show it is not used: a retry under it would be
# due in ten minutes, far past the burst's horizon.
SLOW = RetryPolicy(max_attempts=2, base_delay_seconds=600, jitter_seconds=0)
# The jobs here fail on purpose, many times in a row: no circuit must open over them.
CALM = CircuitPolicy(threshold=1000)


async def burst(app: App) -> tuple[Any, ...]:
    """Run a burst worker of ``app`` to its end; the work it reports as left."""
    worker = app.create_worker(burst=True)
    await asyncio.wait_for(worker.run(), timeout=30)
    return worker.burst_left


async def view(app: App, job_id: str) -> JobView:
    found = await app.get_job(job_id)
    assert found is not None, job_id
    return found


async def test_a_handlers_own_policy_and_attempts_are_used_over_the_workers(
    make_app: Callable[..., App],
) -> None:
    app = make_app(retry=SLOW, burst_horizon_seconds=1.0, circuit=CALM)
    seen: list[int] = []

    @app.job(retry=RetryPolicy(max_attempts=4, base_delay_seconds=0, jitter_seconds=0))
    async def own(ctx: JobContext) -> None:
        seen.append(ctx.max_attempts)
        raise ConnectionError("partner down")

    @app.job()
    async def plain() -> None:
        raise ConnectionError("partner down")

    await app.open()
    own_id = await own.enqueue()
    plain_id = await plain.enqueue()
    left = await burst(app)

    # The handler's policy: four executions, each retry at once, then TRANSIENT.
    mine = await view(app, own_id)
    assert (mine.pillar, mine.failure_reason, mine.attempt_count) == (
        Pillar.DLQ,
        FailureReason.TRANSIENT,
        4,
    )
    assert (mine.error or "").startswith("Attempts exhausted (4 of 4): ConnectionError")
    assert seen == [4, 4, 4, 4]
    # The worker's policy still holds for a handler without one: its retry is ten minutes out.
    theirs = await view(app, plain_id)
    assert (theirs.pillar, theirs.attempt_count) == (Pillar.HOT, 1)
    assert [(item.type, item.reason) for item in left] == [("plain", "waiting")]


async def test_attempts_come_from_the_enqueue_then_the_handler_then_its_policy_then_the_worker(
    make_app: Callable[..., App],
) -> None:
    app = make_app(
        retry=RetryPolicy(max_attempts=2, base_delay_seconds=0, jitter_seconds=0), circuit=CALM
    )

    @app.job(retry=RetryPolicy(max_attempts=5, base_delay_seconds=0, jitter_seconds=0))
    async def by_policy() -> None:
        raise ConnectionError("down")

    @app.job(max_attempts=4, retry=dataclasses.replace(NOW, max_attempts=6))
    async def by_handler() -> None:
        raise ConnectionError("down")

    @app.job()
    async def by_worker() -> None:
        raise ConnectionError("down")

    await app.open()
    expected = {
        await by_policy.enqueue(max_attempts=3): 3,  # per enqueue wins over everything
        await by_policy.enqueue(): 5,  # the handler's policy over the worker's
        await by_handler.enqueue(): 4,  # the handler's max_attempts over its policy's
        await by_worker.enqueue(): 2,  # the worker's policy by default
    }
    assert await burst(app) == ()
    for job_id, attempts in expected.items():
        job = await view(app, job_id)
        assert (job.failure_reason, job.attempt_count) == (FailureReason.TRANSIENT, attempts)


async def test_a_handlers_policy_applies_to_jobs_enqueued_before_it_was_set(
    make_app: Callable[..., App],
) -> None:
    producer = make_app(retry=SLOW, circuit=CALM)

    @producer.job(name="report")
    async def report_before() -> None: ...

    await producer.open()
    job_id = await report_before.enqueue()

    # The worker's code has since given the type its own rules: they apply to that job.
    app = make_app(retry=SLOW, circuit=CALM)

    @app.job(
        name="report", retry=RetryPolicy(max_attempts=4, base_delay_seconds=0, jitter_seconds=0)
    )
    async def report() -> None:
        raise TimeoutError("slow report")

    assert await burst(app) == ()
    job = await view(app, job_id)
    assert (job.failure_reason, job.attempt_count) == (FailureReason.TRANSIENT, 4)


async def test_retry_on_retries_what_it_lists_and_dead_letters_anything_else_at_once(
    make_app: Callable[..., App],
) -> None:
    app = make_app(circuit=CALM)

    @app.job(retry=NOW, retry_on=(ConnectionError,))
    async def fetch(kind: str, ctx: JobContext) -> None:
        if ctx.attempt > 1:
            return
        if kind == "refused":
            raise ConnectionRefusedError("a subclass of ConnectionError")  # retried
        if kind == "throttled":
            raise ThrottledError("429", retry_after_seconds=0)  # asks for a retry: retried
        raise KeyError(kind)  # not listed: fatal

    await app.open()
    refused = await fetch.enqueue(kind="refused")
    throttled = await fetch.enqueue(kind="throttled")
    bad = await fetch.enqueue(kind="bad")
    assert await burst(app) == ()

    for job_id in (refused, throttled):
        job = await view(app, job_id)
        assert (job.pillar, job.attempt_count) == (Pillar.ARCHIVE, 2)
    job = await view(app, bad)
    assert (job.pillar, job.failure_reason, job.attempt_count) == (
        Pillar.DLQ,
        FailureReason.FATAL_ERROR,
        1,
    )
    lines = (job.error or "").splitlines()
    assert lines[0] == "KeyError: 'bad'"  # the DLQ's error families group on the first line
    assert lines[2] == "Not retried: KeyError is not in the retry_on of job type 'fetch'"
    assert "Traceback" in (job.error or "")


async def test_fatal_on_is_checked_before_retry_on_and_worker_fatal_types_still_hold(
    make_app: Callable[..., App],
) -> None:
    app = make_app(fatal_exceptions=(PermissionError,), circuit=CALM)

    @app.job(retry=NOW, retry_on=(OSError,), fatal_on=(FileNotFoundError,))
    async def read(kind: str) -> None:
        if kind == "missing":
            raise FileNotFoundError("in both fatal_on and (as an OSError) retry_on")
        if kind == "denied":
            raise PermissionError("an OSError, but fatal for the worker")
        if kind == "poison":
            raise FatalError("always fatal")
        raise ConnectionResetError("an OSError: retried")

    await app.open()
    ids = {kind: await read.enqueue(kind=kind) for kind in ("missing", "denied", "poison", "reset")}
    assert await burst(app) == ()

    for kind in ("missing", "denied", "poison"):
        job = await view(app, ids[kind])
        assert (job.failure_reason, job.attempt_count) == (FailureReason.FATAL_ERROR, 1), kind
    missing = await view(app, ids["missing"])
    assert "Not retried: FileNotFoundError is in the fatal_on of job type 'read'" in (
        missing.error or ""
    )
    reset = await view(app, ids["reset"])
    assert (reset.failure_reason, reset.attempt_count) == (FailureReason.TRANSIENT, 3)


async def test_a_zero_base_delay_retries_at_once(make_app: Callable[..., App]) -> None:
    # A retry due later than the horizon would be left behind by the burst: it is not.
    app = make_app(retry=NOW, burst_horizon_seconds=0.5, circuit=CALM)
    attempts: list[int] = []

    @app.job()
    def flaky(ctx: JobContext) -> str:
        attempts.append(ctx.attempt)
        if ctx.attempt < 3:
            raise ConnectionError("not yet")
        return "done"

    await app.open()
    job_id = await flaky.enqueue()
    assert await burst(app) == ()
    assert attempts == [1, 2, 3]
    assert await app.result(job_id, timeout=5) == "done"


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"retry": 3}, r"^retry: must be a chokaq.RetryPolicy, not int"),
        ({"retry": {"max_attempts": 3}}, r"^retry: must be a chokaq.RetryPolicy"),
        ({"retry_on": ConnectionError}, r"^retry_on: .*such as \(ConnectionError,\)"),
        ({"retry_on": {ConnectionError}}, r"^retry_on: must be a tuple of exception classes"),
        ({"retry_on": ("ConnectionError",)}, r"^retry_on\[0\]: must be an exception class"),
        ({"retry_on": (ConnectionError, 42)}, r"^retry_on\[1\]: must be an exception class"),
        ({"retry_on": (int,)}, r"^retry_on\[0\]: must be an exception class"),
        ({"fatal_on": ValueError}, r"^fatal_on: .*such as \(ValueError,\)"),
        ({"fatal_on": "ValueError"}, r"^fatal_on: must be a tuple of exception classes, not str"),
        ({"fatal_on": [ValueError, None]}, r"^fatal_on\[1\]: must be an exception class"),
    ],
)
async def test_bad_policy_options_are_refused_at_decoration_naming_the_option(
    make_app: Callable[..., App], options: dict[str, Any], field: str
) -> None:
    app = make_app(circuit=CALM)
    with pytest.raises(ValidationError, match=field):

        @app.job(**options)
        async def handler() -> None: ...

    assert app.handlers == {}


async def test_lists_are_accepted_as_tuples(make_app: Callable[..., App]) -> None:
    app = make_app(circuit=CALM)

    @app.job(retry_on=[ConnectionError], fatal_on=[ValueError, KeyError])
    async def handler() -> None: ...

    assert handler.retry_on == (ConnectionError,)
    assert handler.fatal_on == (ValueError, KeyError)
    assert handler.retry is None  # the worker's policy


def _doc_block(name: str, marker: str) -> str:
    """The Python block of ``docs/<name>`` that contains ``marker``."""
    text = (DOCS / name).read_text(encoding="utf-8")
    blocks = [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if marker in b]
    assert len(blocks) == 1, f"{name}: {len(blocks)} python blocks hold {marker!r}"
    return blocks[0]


async def test_the_celery_port_in_the_migration_guide_runs_as_written(
    make_app: Callable[..., App],
) -> None:
    app = make_app(circuit=CALM)
    code = compile(
        _doc_block("migrating-from-celery-rq.md", "retry_on=(ConnectionError,)"),
        "migrating-from-celery-rq.md",
        "exec",
        flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT,
    )
    namespace: dict[str, Any] = {"app": app}
    run = eval(code, namespace)  # the block awaits: it compiles to a coroutine
    if run is not None:
        await run
    handle = namespace["sync_account"]
    # autoretry_for, retry_backoff (1 s, doubling, up to 600 s) and max_retries=4, ported.
    assert handle.retry_on == (ConnectionError,)
    assert handle.retry.max_attempts == 5
    steady = dataclasses.replace(handle.retry, jitter_seconds=0)
    assert [steady.backoff(n) for n in (1, 2, 3, 4, 20)] == [1, 2, 4, 8, 600]
    job = await view(app, namespace["job_id"])
    assert (job.pillar, job.type, job.queue) == (Pillar.HOT, "sync_account", "sync")
    assert job.scheduled_at is not None and job.scheduled_at > job.created_at
    # countdown=60 and expires=3600, both from the enqueue.
    assert job.expires_at is not None
    assert (job.expires_at - job.created_at).total_seconds() == pytest.approx(3600)
    assert (job.scheduled_at - job.created_at).total_seconds() == pytest.approx(60)
