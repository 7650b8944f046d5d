"""The worker runtime's events that only a fault, a race with an operator or a lost election
drives, each by a real scenario in this process.

Real stores throughout: a SQLite file whose write lock another connection holds (the file
"locked by another process", the way a SQLite store becomes unavailable), an operator's second
App on the same file, a rival taking the leader's role behind its back, and PostgreSQL where
the path needs it. No mocks: each scenario waits for its event by polling the captured log lines
with a generous deadline, so a busy machine only makes it slower.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from tests.conftest import PG_URL, Raw, Store
from tests.runtime.conftest import FAST, knows_queue, running, until

from chokaq import (
    App,
    CircuitPolicy,
    FailureReason,
    JobContext,
    JobStatus,
    Pillar,
    RetryPolicy,
    ThrottledError,
    WorkerSettings,
)
from chokaq.logs import Event

from .test_events import captured, only

DEADLINE = 60.0  # seconds; only a stalled run comes near it


async def logged(lines: list[dict[str, Any]], event: Event, **match: Any) -> dict[str, Any]:
    """The first line of ``event`` whose fields include ``match``, once it has been logged."""

    def first() -> dict[str, Any] | None:
        for line in list(lines):
            if line["event_id"] == event and all(line.get(k) == v for k, v in match.items()):
                return line
        return None

    deadline = time.monotonic() + DEADLINE
    while (line := first()) is None:
        assert time.monotonic() < deadline, (event.name, match, lines)
        await asyncio.sleep(0.02)
    return line


def sqlite_app(path: Path, **settings: Any) -> App:
    # A short busy timeout: while another connection holds the file's write lock, each write
    # of the worker gives up within about a second instead of ten.
    return App(
        f"sqlite:///{path}",
        busy_timeout_seconds=0.05,
        worker=WorkerSettings(**{**FAST, "shutdown_grace_seconds": 30.0, **settings}),
    )


@contextmanager
def write_locked(path: Path) -> Iterator[None]:
    """Hold the SQLite file's write lock for the block, as another process would: every
    write of the worker fails as "database is locked" until the block ends."""
    conn = sqlite3.connect(path, timeout=30, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        yield
        conn.execute("ROLLBACK")
    finally:
        conn.close()


async def pillar_of(app: App, job_id: str) -> Pillar | None:
    view = await app.backend.job_get(job_id)
    return None if view is None else view.pillar


async def status_of(app: App, job_id: str) -> JobStatus | None:
    view = await app.backend.job_get(job_id)
    assert view is not None and view.pillar is Pillar.HOT, view
    return view.status


async def _true(value: bool) -> bool:
    return value


@pytest.fixture
async def apps() -> AsyncIterator[list[App]]:
    """Apps to close at the end of the test (the worker's, an operator's)."""
    opened: list[App] = []
    yield opened
    for app in opened:
        await app.close()


async def open_app(apps: list[App], app: App) -> App:
    apps.append(app)
    await app.open()
    return app


async def one_running_two_buffered(app: App, gate: asyncio.Event) -> list[str]:
    """Enqueue three blocking jobs; return their ids (a worker with concurrency 1 and
    prefetch 2 runs one and holds the other two as Fetched in its buffer)."""

    @app.job()
    async def hold(n: int) -> None:
        await gate.wait()

    return [str(i) for i in await app.enqueue_many([hold.prepare(n=i) for i in range(3)])]


# -- leases -----------------------------------------------------------------------------------


async def test_a_job_rescued_under_its_worker_logs_job_lease_lost(
    tmp_path: Path, apps: list[App]
) -> None:
    app = await open_app(apps, sqlite_app(tmp_path / "jobs.db"))
    operator = await open_app(apps, sqlite_app(tmp_path / "jobs.db"))
    started = asyncio.Event()

    @app.job()
    async def slow() -> None:
        started.set()
        await asyncio.sleep(120)

    job_id = str(await slow.enqueue())
    with captured() as lines:
        async with running(app) as worker:
            await asyncio.wait_for(started.wait(), DEADLINE)
            # Another process's rescue, with a clock two minutes ahead, declares it a zombie:
            # the worker's next heartbeat finds the lease gone and stops the job.
            rescue = await operator.backend.jobs_rescue(
                fetched_timeout_seconds=60,
                processing_timeout_seconds=60,
                now=datetime.now(UTC) + timedelta(seconds=120),
            )
            assert rescue.zombies == (job_id,)
            line = await logged(lines, Event.JOB_LEASE_LOST, job_id=job_id)
    assert line["worker_id"] == worker.id
    view = await app.backend.job_get(job_id)
    assert view is not None and view.pillar is Pillar.DLQ
    assert view.failure_reason is FailureReason.ZOMBIE
    assert not [x for x in lines if x["event_id"] == Event.TRANSITION_NOT_APPLIED]


async def test_a_claim_storage_cannot_confirm_is_given_back_and_not_started(
    tmp_path: Path, apps: list[App]
) -> None:
    # Heartbeats every 30 s and a one-second zombie timeout on the queue: the claim is proven
    # for 0.75 s. A middleware holds the job past that, and when it lets go the file is
    # locked by another process: the worker cannot confirm the claim, so it does not start
    # the handler (2030, reason unproven) and gives the job back with its attempt refunded,
    # once storage answers again. The next claim runs it as attempt 1.
    path = tmp_path / "jobs.db"
    slow_beats = dict(heartbeat_min_seconds=30, heartbeat_max_seconds=31, zombie_timeout_seconds=60)
    app = await open_app(apps, sqlite_app(path, **slow_beats))
    held = asyncio.Event()
    release = asyncio.Event()
    ran: list[int] = []

    @app.job()
    async def task(ctx: JobContext) -> None:
        ran.append(ctx.attempt)

    @app.middleware
    async def hold(ctx: JobContext, call_next: Any) -> Any:
        if not held.is_set():
            held.set()
            await release.wait()
        return await call_next()

    # The seam refuses a queue timeout under its floor (15 s); a row written before the floor
    # existed may hold one, and it is what makes the proof short enough to outlive here.
    await app.backend.queue_configure(name="default", zombie_timeout_seconds=60.0, create=True)
    planted = Raw(f"sqlite:///{path}", "chokaq")
    planted.rows("UPDATE {queues} SET zombie_timeout_seconds = 1.0 WHERE name = 'default'")
    planted.close()
    with captured() as lines:
        async with running(app) as worker:
            # The worker reads the queue's settings on its first registry beat.
            await until(lambda: _true(knows_queue(worker, "default")), timeout=DEADLINE)
            job_id = str(await task.enqueue())
            await asyncio.wait_for(held.wait(), DEADLINE)
            proof_ends = time.monotonic() + 0.75
            deadline = time.monotonic() + DEADLINE
            while time.monotonic() <= proof_ends:
                assert time.monotonic() < deadline
                await asyncio.sleep(0.02)
            with write_locked(path):
                release.set()
                refused = await logged(lines, Event.JOB_NOT_STARTED, job_id=job_id)
            await until(lambda: _archived(app, job_id), timeout=DEADLINE)
    assert refused["reason"] == "unproven" and refused["level"] == 30
    assert ran == [1]
    view = await app.backend.job_get(job_id)
    assert view is not None and view.attempt_count == 1


async def _archived(app: App, job_id: str) -> bool:
    return await pillar_of(app, job_id) is Pillar.ARCHIVE


async def test_a_prefetched_job_cancelled_before_it_starts_logs_job_lease_rejected(
    tmp_path: Path, apps: list[App]
) -> None:
    app = await open_app(apps, sqlite_app(tmp_path / "jobs.db", fetched_timeout_seconds=600))
    operator = await open_app(apps, sqlite_app(tmp_path / "jobs.db"))
    gate = asyncio.Event()
    await one_running_two_buffered(app, gate)
    with captured() as lines:
        async with running(app, concurrency=1, prefetch=2) as worker:
            await until(lambda: _true(len(worker.running) == 1 and len(worker.slots.buffer) == 2))
            buffered = worker.slots.buffer[0].id
            result = await operator.backend.jobs_cancel(ids=[buffered], actor="ops-anna")
            assert result.cancelled == (buffered,)
            gate.set()  # the running job ends; the worker starts its buffered ones
            line = await logged(lines, Event.JOB_LEASE_REJECTED, job_id=buffered)
    assert line["level"] == 30
    view = await app.backend.job_get(buffered)
    assert view is not None and view.pillar is Pillar.DLQ and view.cancelled_by == "ops-anna"


# -- prefetched jobs ----------------------------------------------------------------------------


async def test_stopping_with_prefetched_jobs_logs_prefetched_job_released(
    tmp_path: Path, apps: list[App]
) -> None:
    app = await open_app(apps, sqlite_app(tmp_path / "jobs.db", fetched_timeout_seconds=600))
    gate = asyncio.Event()
    ids = await one_running_two_buffered(app, gate)
    with captured() as lines:
        async with running(app, concurrency=1, prefetch=2) as worker:
            await until(lambda: _true(len(worker.running) == 1 and len(worker.slots.buffer) == 2))
            buffered = {job.id for job in worker.slots.buffer}
            worker.stop()
            line = await logged(lines, Event.PREFETCHED_JOB_RELEASED)
            gate.set()
    assert (line["count"], line["worker_id"]) == (2, worker.id)
    for job_id in buffered:
        assert await status_of(app, job_id) is JobStatus.PENDING
    [ran] = set(ids) - buffered
    assert await pillar_of(app, ran) is Pillar.ARCHIVE


async def test_a_release_on_a_locked_file_logs_prefetched_job_release_failed(
    tmp_path: Path, apps: list[App]
) -> None:
    path = tmp_path / "jobs.db"
    app = await open_app(apps, sqlite_app(path, fetched_timeout_seconds=600))
    gate = asyncio.Event()
    await one_running_two_buffered(app, gate)
    with captured() as lines:
        async with running(app, concurrency=1, prefetch=2) as worker:
            await until(lambda: _true(len(worker.running) == 1 and len(worker.slots.buffer) == 2))
            buffered = {job.id for job in worker.slots.buffer}
            with write_locked(path):
                worker.stop()
                line = await logged(lines, Event.PREFETCHED_JOB_RELEASE_FAILED)
            gate.set()  # the file is writable again: the running job's outcome is recorded
    assert line["count"] == 2 and "locked" in line["error"] and line["level"] == 30
    assert not [x for x in lines if x["event_id"] == Event.PREFETCHED_JOB_RELEASED]
    # Still Fetched under the stopped worker's lease: rescue is what recovers them.
    for job_id in buffered:
        assert await status_of(app, job_id) is JobStatus.FETCHED


# -- storage trouble ----------------------------------------------------------------------------


async def test_a_locked_file_logs_finalize_retrying_and_maintenance_failed(
    tmp_path: Path, apps: list[App]
) -> None:
    path = tmp_path / "jobs.db"
    # A long zombie timeout: the job misses heartbeats during the outage, and the point here
    # is that its outcome, kept by the finalizer, is written once the file is free.
    app = await open_app(apps, sqlite_app(path, zombie_timeout_seconds=600))
    started, gate = asyncio.Event(), asyncio.Event()

    @app.job()
    async def report() -> None:
        started.set()
        await gate.wait()

    job_id = str(await report.enqueue())
    with captured() as lines:
        async with running(app):
            await asyncio.wait_for(started.wait(), DEADLINE)
            with write_locked(path):
                gate.set()  # the job succeeds while its outcome cannot be written
                retrying = await logged(lines, Event.FINALIZE_RETRYING)
                failed = await logged(lines, Event.MAINTENANCE_FAILED)

            async def archived() -> bool:
                return await pillar_of(app, job_id) is Pillar.ARCHIVE

            await until(archived, timeout=DEADLINE)  # the kept batch is written once free
    assert retrying["moves"] == 1 and "locked" in retrying["error"]
    assert retrying["level"] == 40 and retrying["retry_in"] > 0  # the first failure: ERROR
    assert "locked" in failed["error"] and failed["level"] == 30


# -- bugs the worker survives -------------------------------------------------------------------


async def test_an_executor_failure_logs_worker_loop_crashed_and_rescue_recovers_the_job(
    tmp_path: Path, apps: list[App]
) -> None:
    # The application's own throttling error reads its retry-after lazily from the response
    # header, and cannot parse the HTTP-date form: the executor raises while deciding the
    # outcome, outside the handler. The worker must say so and not lose the job: it stays
    # Processing without heartbeats and rescue moves it to the DLQ as a zombie.
    class QuotaExceeded(ThrottledError):
        def __init__(self, header: str) -> None:
            self.header = header
            super().__init__("429")

        @property  # type: ignore[override]
        def retry_after_seconds(self) -> float | None:
            return float(self.header)

        @retry_after_seconds.setter
        def retry_after_seconds(self, value: float | None) -> None:
            pass

    app = await open_app(apps, sqlite_app(tmp_path / "jobs.db"))

    @app.job()
    async def partner() -> None:
        raise QuotaExceeded("Wed, 21 Oct 2026 07:28:00 GMT")

    job_id = str(await partner.enqueue())
    with captured() as lines:
        async with running(app):
            crashed = await logged(lines, Event.WORKER_LOOP_CRASHED, job_id=job_id)
            zombies = await logged(lines, Event.ZOMBIES_DEAD_LETTERED, ids=job_id)
    assert crashed["error"].startswith("ValueError(") and crashed["level"] == 40
    assert zombies["count"] == 1
    view = await app.backend.job_get(job_id)
    assert view is not None and view.pillar is Pillar.DLQ
    assert view.failure_reason is FailureReason.ZOMBIE


async def test_a_side_task_that_raises_logs_worker_side_task_died(
    tmp_path: Path, apps: list[App]
) -> None:
    # A retention pass that raises something other than a storage error (a bug): the
    # maintenance side task dies, and the supervisor says so and restarts it. The fault is put
    # into one step of the pass on the real backend (settings that overflowed a date once did
    # this, but every retention period is now checked against its maximum).
    app = await open_app(apps, sqlite_app(tmp_path / "jobs.db", retention_interval_seconds=0.1))

    async def broken(**_: object) -> int:
        raise RuntimeError("a bug in a retention step")

    app.backend.unique_keys_tidy = broken  # type: ignore[method-assign]
    with captured() as lines:
        async with running(app) as worker:
            died = await logged(lines, Event.WORKER_SIDE_TASK_DIED, task="maintenance")
            assert worker.state == "running"
    assert died["error"].startswith("RuntimeError(") and died["level"] == 40


# -- maintenance ----------------------------------------------------------------------------


async def test_rescue_of_a_dead_workers_rows_logs_fetched_recovered_and_zombies(
    tmp_path: Path, apps: list[App]
) -> None:
    app = await open_app(apps, sqlite_app(tmp_path / "jobs.db"))

    @app.job()
    async def task(n: int) -> None:
        return None

    # A worker that died an hour ago: one job it prefetched, one it was running.
    hour_ago = datetime.now(UTC) - timedelta(hours=1)
    backend = app.backend
    await backend.jobs_enqueue([task.prepare(n=i) for i in range(2)], now=hour_ago)
    [claimed] = await backend.jobs_fetch(worker_id="dead-1", limit=1, start=False, now=hour_ago)
    [started] = await backend.jobs_fetch(worker_id="dead-1", limit=1, start=True, now=hour_ago)
    fetched, processing = claimed.id, started.id
    with captured() as lines:
        async with running(app):
            recovered = await logged(lines, Event.FETCHED_JOBS_RECOVERED)
            zombies = await logged(lines, Event.ZOMBIES_DEAD_LETTERED)

            async def ran() -> bool:
                return await pillar_of(app, fetched) is Pillar.ARCHIVE

            await until(ran, timeout=DEADLINE)  # back to Pending, then run by this worker
    assert recovered["count"] == 1
    assert (zombies["count"], zombies["ids"], zombies["level"]) == (1, processing, 30)
    view = await app.backend.job_get(processing)
    assert view is not None and view.pillar is Pillar.DLQ
    assert view.failure_reason is FailureReason.ZOMBIE


async def test_a_job_claimed_past_its_half_open_probe_logs_job_circuit_deferred(
    tmp_path: Path, apps: list[App]
) -> None:
    # One failure opens the circuit for half a second; then it is half-open with one probe
    # slot, so of the two jobs claimed together the first runs as the probe (and holds its
    # slot) and the second is deferred without consuming an attempt.
    app = await open_app(
        apps,
        sqlite_app(
            tmp_path / "jobs.db",
            circuit=CircuitPolicy(threshold=1, break_seconds=0.5, half_open_max_calls=1),
            circuit_delay_seconds=600,
            retry=RetryPolicy(max_attempts=1),
        ),
    )
    gate = asyncio.Event()

    @app.job()
    async def gateway(n: int) -> None:
        if n == 0:
            raise TimeoutError("gateway down")
        await gate.wait()

    first = str(await gateway.enqueue(n=0))
    with captured() as lines:
        async with running(app, concurrency=2) as worker:

            async def dead() -> bool:
                return await pillar_of(app, first) is Pillar.DLQ

            await until(dead, timeout=DEADLINE)
            assert worker.circuits.snapshot()[0].state.value in ("open", "half_open")
            # Both in one insert: every fetch sees both or neither.
            pair = {str(i) for i in await app.enqueue_many([gateway.prepare(n=n) for n in (1, 2)])}
            line = await logged(lines, Event.JOB_CIRCUIT_DEFERRED)
            gate.set()
    assert line["job_id"] in pair and line["type"] == "gateway"
    view = await app.backend.job_get(line["job_id"])
    assert view is not None and view.status is JobStatus.PENDING and view.attempt_count == 0


# -- leadership --------------------------------------------------------------------------------


def take_over(store: Store, holder: str) -> None:
    """What a rival does once the leader's lease ran out behind its back (a partition, a frozen
    process): the role passes to ``holder`` with the next epoch, for an hour."""
    if store.dialect == "sqlite":
        conn = sqlite3.connect(store.url.removeprefix("sqlite:///"), timeout=30)
        with conn:
            conn.execute(
                f"UPDATE {store.schema}_leadership"
                " SET holder = ?, epoch = epoch + 1, expires_at = expires_at + 3600",
                (holder,),
            )
        conn.close()
        return
    with psycopg.connect(PG_URL, autocommit=True) as pg:
        pg.execute(
            f'UPDATE "{store.schema}".leadership'
            " SET holder = %s, epoch = epoch + 1, expires_at = expires_at + interval '1 hour'",
            (holder,),
        )


async def test_a_leader_whose_lease_is_taken_logs_leadership_lost(
    store: Store, apps: list[App]
) -> None:
    # A long lease (no stall of the loaded machine can lose it), renewed often (the loss is
    # heard within half a second).
    lease = {"leadership_lease_seconds": 30.0, "leadership_renew_seconds": 0.5}
    settings = WorkerSettings(**{**FAST, **lease})
    app = await open_app(
        apps, App(store.url, schema=store.schema, auto_migrate=True, worker=settings)
    )
    with captured() as lines:
        async with running(app) as worker:
            acquired = await logged(lines, Event.LEADERSHIP_ACQUIRED, worker_id=worker.id)
            take_over(store, "rival")
            lost = await logged(lines, Event.LEADERSHIP_LOST, worker_id=worker.id)
            term = await app.backend.leadership_get(name="maintenance")
            # Checked while the rival still holds the role: the worker did not take it back.
            assert term is not None and term.holder == "rival"
            assert only(lines, Event.LEADERSHIP_ACQUIRED)["worker_id"] == worker.id
    assert acquired["epoch"] == lost["epoch"] == term.epoch - 1
    assert lost["leading"] is False and lost["level"] == 20
    # Whichever comes first: the next renewal is refused, or the next pass's write is fenced.
    assert lost["reason"] in {"renewal refused", "write fenced"}


async def test_a_leader_that_stops_cleanly_releases_its_lease_at_once(
    store: Store, apps: list[App]
) -> None:
    # A lease far longer than the test: only the release can free the role this soon.
    settings = WorkerSettings(**{**FAST, "leadership_lease_seconds": 600.0})
    app = await open_app(
        apps, App(store.url, schema=store.schema, auto_migrate=True, worker=settings)
    )
    with captured() as lines:
        async with running(app) as worker:
            await logged(lines, Event.LEADERSHIP_ACQUIRED, worker_id=worker.id)
            term = await app.backend.leadership_get(name="maintenance")
            assert term is not None and term.holder == worker.id
    assert await app.backend.leadership_get(name="maintenance") is None
    successor = await app.backend.leadership_claim(
        name="maintenance", holder="successor", lease_seconds=60
    )
    assert successor is not None and successor.epoch == term.epoch + 1
