"""The worker: claims jobs within its free slots, runs them concurrently, heartbeats them,
finalizes their outcomes in batches, and shuts down in two phases.

Side tasks (heartbeats, the finalizer, the registry beat, maintenance) are supervised: if one
dies the worker logs it loudly and restarts it. The worker talks to storage only through the
backend interface; deciding outcomes is ``executor``'s job, maintenance is ``maintenance``'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import socket
import time
import uuid
from collections import deque
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, Any, cast

from ..context import JobContext
from ..errors import StorageError
from ..logs import Event, log_event, logger
from ..models import (
    ClaimedJob,
    FailMove,
    FailureReason,
    Move,
    QueueInfo,
    RetryMove,
    SucceedMove,
)
from .circuit import CircuitBreakers, CircuitState
from .executor import Execution, StopReason, execute
from .finalizer import Finalizer
from .heartbeat import Heartbeats
from .maintenance import Maintenance
from .registry import Registry
from .report import report_outcome
from .settings import WorkerSettings

if TYPE_CHECKING:
    from ..app import App, JobHandle, PipeHandle

__all__ = ["Worker"]

WARNING = 30
ERROR = 40


class Worker:
    """One worker process's runtime. ``run()`` until ``stop()`` (or, in burst mode, until no
    eligible job is left). Listeners added with ``add_listener`` hear every job outcome."""

    def __init__(self, app: App, settings: WorkerSettings) -> None:
        self.app = app
        self.settings = settings
        self.id = f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.concurrency = settings.concurrency
        self.running: dict[str, Execution] = {}
        self.buffer: deque[ClaimedJob] = deque()
        self.circuits = CircuitBreakers(settings.circuit, on_event=self._circuit_event)
        self.threads = ThreadPoolExecutor(
            max_workers=settings.sync_threads or settings.concurrency,
            thread_name_prefix="chokaq-job",
        )
        self.started_at = datetime.now(UTC)
        self.last_fetch_at: float | None = None
        self.queues: dict[str, QueueInfo] = {}
        self.state = "starting"
        self.listeners: list[Callable[[str, dict[str, Any]], None]] = []
        self._wake = asyncio.Event()
        self._slot_freed = asyncio.Event()
        self._stopping = asyncio.Event()
        self._hurry = False
        self._side_tasks: list[asyncio.Task[None]] = []
        self.finalizer: Finalizer | None = None
        self.heartbeats = Heartbeats(self)
        self.registry = Registry(self)
        self._storage_down_since: float | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._loop: asyncio.AbstractEventLoop = cast(
            asyncio.AbstractEventLoop, None
        )  # run() sets it
        self._verbose = False

    # -- control ----------------------------------------------------------------------------

    def stop(self, *, hurry: bool = False) -> None:
        """Begin a graceful shutdown (``hurry``: skip the grace period). Safe from signals."""
        if self._stopping.is_set():
            self._hurry = True
        self._hurry = self._hurry or hurry
        self._stopping.set()
        self._poke()

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def set_concurrency(self, n: int) -> None:
        """Change how many jobs run at once; scale-down never interrupts running jobs."""
        n = max(1, min(1000, int(n)))
        if n != self.concurrency:
            log_event(
                Event.WORKER_CAPACITY_CHANGED,
                "concurrency changed",
                worker_id=self.id,
                old=self.concurrency,
                new=n,
            )
            self.concurrency = n
            self.threads._max_workers = max(self.threads._max_workers, n)
            self._slot_freed.set()
        self._poke()

    def add_listener(self, listener: Callable[[str, dict[str, Any]], None]) -> None:
        """``listener(event, fields)`` for job and worker events (metrics hook)."""
        self.listeners.append(listener)

    def emit(self, name: str, **fields: Any) -> None:
        for listener in self.listeners:
            with contextlib.suppress(Exception):
                listener(name, fields)

    # -- main loop --------------------------------------------------------------------------

    async def run(self) -> None:
        """Run until stopped. Opens (and at the end closes) the app if it was not open."""
        owns_app = not self.app._opened
        self._loop = asyncio.get_running_loop()
        self._verbose = logger.isEnabledFor(10)
        await self.app.open()
        backend = self.app.backend
        self.finalizer = Finalizer(
            backend, self.settings.finalize_batch_max, partial(report_outcome, self)
        )
        notifier = backend.notifier()
        listening = False
        try:
            await notifier.start(self._on_jobs, self._on_cancel)
            listening = True
        except Exception as exc:
            log_event(
                Event.WORKER_LISTEN_FAILED,
                "cannot listen for notifications; polling",
                level=WARNING,
                error=str(exc),
            )
        maintenance = Maintenance(self)
        supervised: list[tuple[str, Callable[[], Awaitable[None]]]] = [
            ("finalizer", self.finalizer.run),
            ("heartbeat", self.heartbeats.run),
            ("watchdog", self.heartbeats.watchdog),
            ("registry", self.registry.run),
            ("maintenance", maintenance.run),
        ]
        self._side_tasks = [
            asyncio.create_task(self._supervise(name, fn), name=f"chokaq-{name}")
            for name, fn in supervised
        ]
        self.state = "running"
        log_event(
            Event.WORKER_STARTED,
            "worker started",
            worker_id=self.id,
            queues=",".join(self.settings.queues or ("*",)),
            concurrency=self.concurrency,
            listening=listening,
            backend=backend.capabilities.name,
        )
        try:
            await self._fetch_loop(notifier if listening else None)
        finally:
            await self._shutdown(notifier, maintenance)
            if owns_app:
                await self.app.close()

    def _poll_interval(self, notifier_ok: bool) -> float:
        if self.settings.poll_interval_seconds is not None:
            return self.settings.poll_interval_seconds
        return 1.0 if notifier_ok else 0.05

    async def _fetch_loop(self, notifier: Any) -> None:
        settings = self.settings
        failures = 0
        while not self._stopping.is_set():
            free = self.concurrency - len(self.running)
            if free <= 0:
                self._slot_freed.clear()
                await self._wait(self._slot_freed, None)
                continue
            self._wake.clear()
            try:
                got = await self._claim(free)
            except StorageError as exc:
                failures += 1
                self._storage_trouble(exc)
                await self._wait(
                    None, min(5.0, 0.1 * 2 ** min(failures, 6)) * random.uniform(0.5, 1)
                )
                continue
            if failures:
                failures = 0
                self._storage_recovered()
            if got >= free:
                continue  # more work is likely waiting
            if settings.burst and got == 0 and await self._burst_done():
                log_event(
                    Event.WORKER_STOPPED, "burst finished: no eligible job left", worker_id=self.id
                )
                self.stop()
                break
            if got:
                continue
            # Only a backend that notifies across processes lets an idle worker sleep long.
            healthy = notifier is not None and notifier.healthy and notifier.cross_process
            await self._wait(self._wake, self._poll_interval(healthy))

    async def _claim(self, free: int) -> int:
        """Start buffered jobs, then claim more straight into Processing; refill the prefetch."""
        backend = self.app.backend
        started = 0
        if self.buffer:
            started += await self._start_buffered(free)
            free = self.concurrency - len(self.running)
            if started:
                await asyncio.sleep(0)  # let them begin first: see below
        got = 0
        if free > 0:
            jobs = await backend.jobs_fetch(
                worker_id=self.id,
                limit=free,
                queues=self.settings.queues,
                exclude_types=self.circuits.blocked(),
                start=True,
            )
            self.last_fetch_at = time.monotonic()
            for job in jobs:
                self._launch(job)
            got = len(jobs)
            if got:
                # The jobs just launched take their first step before the next statement is
                # sent: after an idle spell, sending one wakes the server's process, which
                # costs 0.25-0.3 ms on a virtual machine and would delay every handler's start.
                await asyncio.sleep(0)
        room = self.settings.prefetch - len(self.buffer)
        if room > 0 and (free <= 0 or got == free):
            more = await backend.jobs_fetch(
                worker_id=self.id,
                limit=room,
                queues=self.settings.queues,
                exclude_types=self.circuits.blocked(),
                start=False,
            )
            self.buffer.extend(more)
        return got + started

    async def _start_buffered(self, free: int) -> int:
        take: list[ClaimedJob] = []
        release: list[ClaimedJob] = []
        blocked = set(self.circuits.blocked())
        while self.buffer and len(take) < free:
            job = self.buffer.popleft()
            queue = self.queues.get(job.queue)
            if job.type in blocked or (queue is not None and (queue.paused or not queue.active)):
                release.append(job)
            else:
                take.append(job)
        if release:
            await self._release(release)
        if not take:
            return 0
        started = await self.app.backend.jobs_start_many(leases=[j.lease for j in take])
        for job in take:
            info = started.get(job.id)
            if info is None:
                log_event(
                    Event.JOB_LEASE_REJECTED,
                    "prefetched job was reclaimed before it started; skipping it",
                    level=WARNING,
                    job_id=job.id,
                )
                continue
            self._launch(_as_started(job, info.attempt_count, info.started_at))
        return len(started)

    async def _release(self, jobs: list[ClaimedJob]) -> None:
        try:
            released = await self.app.backend.jobs_release(leases=[j.lease for j in jobs])
            log_event(
                Event.PREFETCHED_JOB_RELEASED,
                "released prefetched jobs",
                count=len(released),
                worker_id=self.id,
            )
        except StorageError as exc:
            log_event(
                Event.PREFETCHED_JOB_RELEASE_FAILED,
                "could not release prefetched jobs; rescue will recover them",
                level=WARNING,
                error=str(exc),
                count=len(jobs),
            )

    async def _burst_done(self) -> bool:
        """In burst mode: nothing running, buffered or waiting to be finalized, and a fresh
        fetch finds nothing."""
        while self.running or self.buffer:
            self._slot_freed.clear()
            await self._wait(self._slot_freed, 0.05)
            if self.buffer and len(self.running) < self.concurrency:
                return False
        assert self.finalizer is not None
        await self.finalizer.drain()
        return await self._claim(self.concurrency) == 0

    def _launch(self, job: ClaimedJob) -> None:
        queue = self.queues.get(job.queue)
        handle: JobHandle[Any, Any] | PipeHandle | None = self.app.handlers.get(job.type)
        is_pipe = False
        if handle is None:
            handle = self.app.pipes.get(job.queue)
            is_pipe = handle is not None
        # Per job, then per queue, then per type (or pipe), then the worker's default.
        timeout = (
            job.timeout_seconds
            or (queue.execution_timeout_seconds if queue is not None else None)
            or (handle.timeout if handle is not None else None)
            or self.settings.default_timeout_seconds
        )
        max_attempts = (
            job.max_attempts
            or (handle.max_attempts if handle is not None else None)
            or self.settings.retry.max_attempts
        )
        context = JobContext(
            job_id=job.id,
            type=job.type,
            queue=job.queue,
            attempt=job.attempt_count,
            max_attempts=max_attempts,
            created_at=job.created_at,
            tags=job.tags,
            worker_id=self.id,
            trace_context=job.trace_context,
        )
        now = time.monotonic()
        ex = Execution(
            job=job,
            context=context,
            timeout_seconds=timeout,
            handle=handle,
            is_pipe=is_pipe,
            started=now,
        )
        ex.next_beat = now + self.heartbeats.interval()
        context._loop = self._loop
        context._beat = partial(self.heartbeats.request, ex)
        self.running[job.id] = ex
        ex.task = self._loop.create_task(self._run_one(ex))
        if self.listeners:
            due = job.scheduled_at or job.created_at
            lag = ((job.started_at or datetime.now(UTC)) - due).total_seconds()
            self.emit("started", job_id=job.id, type=job.type, queue=job.queue, lag=max(0.0, lag))

    async def _run_one(self, ex: Execution) -> None:
        job = ex.job
        permit = self.circuits.acquire(job.type)
        move: Move | None
        if permit is None:
            # The circuit opened after this job was claimed: defer it, attempt refunded.
            log_event(
                Event.JOB_CIRCUIT_DEFERRED,
                "circuit open; job deferred",
                job_id=job.id,
                type=job.type,
            )
            move = RetryMove(
                job.lease,
                None,
                delay_seconds=self.settings.circuit_delay_seconds,
                refund_attempt=True,
                count_retry=False,
            )
        else:
            try:
                move = await execute(self, ex)
            except asyncio.CancelledError:
                self.circuits.release(job.type, permit)
                self._done(ex)
                raise
            except BaseException as exc:  # a bug of ours: never lose the job silently
                log_event(
                    Event.WORKER_LOOP_CRASHED,
                    "executor failed",
                    level=ERROR,
                    job_id=job.id,
                    error=repr(exc),
                )
                move = None
            self._report_circuit(ex, move, permit)
        self._done(ex)
        if ex.abandoned:
            return
        if move is None:
            if ex.stop_reason is StopReason.LEASE_LOST:
                log_event(
                    Event.JOB_LEASE_LOST,
                    "lease lost; the job's outcome is not ours to record",
                    level=WARNING,
                    job_id=job.id,
                    worker_id=self.id,
                )
            return
        assert self.finalizer is not None
        self.finalizer.submit(move, ex)

    def _report_circuit(self, ex: Execution, move: Move | None, permit: int) -> None:
        key = ex.job.type
        if type(move) is SucceedMove:
            self.circuits.success(key, permit)
        elif isinstance(move, FailMove) and move.reason in (
            FailureReason.CANCELLED,
            FailureReason.REJECTED,
            FailureReason.HEARTBEAT_FAILURE,
        ):
            self.circuits.release(key, permit)
        elif isinstance(move, FailMove) or (isinstance(move, RetryMove) and move.count_retry):
            self.circuits.failure(key, permit)
        else:
            self.circuits.release(key, permit)

    def _done(self, ex: Execution) -> None:
        if self.running.get(ex.job.id) is ex:
            del self.running[ex.job.id]
        self._slot_freed.set()
        self._poke()

    # -- notifications ----------------------------------------------------------------------

    def _on_jobs(self, queue: str) -> None:
        # An empty name means "some queue": the notifier could not say which.
        if not queue or self.settings.queues is None or queue in self.settings.queues:
            self._wake.set()
            self._poke()

    def _on_cancel(self, job_id: str) -> None:
        if not job_id:  # some job, the notifier could not say which: ask for all of ours
            for running in self.running.values():
                self.heartbeats.request(running)
            return
        ex = self.running.get(job_id)
        if ex is not None:
            log_event(Event.JOB_CANCEL_REQUESTED, "cancel requested", job_id=job_id)
            self.heartbeats.request(ex)

    def _circuit_event(self, key: str, state: CircuitState, event: str) -> None:
        self.emit("circuit", key=key, state=state.value, event=event)

    # -- storage trouble --------------------------------------------------------------------

    def _storage_trouble(self, exc: Exception) -> None:
        if self._storage_down_since is None:
            self._storage_down_since = time.monotonic()
            log_event(
                Event.WORKER_STORAGE_UNAVAILABLE,
                "storage unavailable; retrying with backoff",
                level=ERROR,
                error=str(exc),
            )

    def _storage_recovered(self) -> None:
        if self._storage_down_since is not None:
            log_event(
                Event.WORKER_STORAGE_RECOVERED,
                "storage reachable again",
                down_seconds=round(time.monotonic() - self._storage_down_since, 3),
            )
            self._storage_down_since = None

    # -- plumbing ---------------------------------------------------------------------------

    async def _wait(self, event: asyncio.Event | None, timeout: float | None) -> None:
        """Wait for ``event``, the stop signal, or ``timeout`` seconds, whichever is first.

        Only the fetch loop waits here, on one plain future that every wake-up resolves
        (``_poke``): this is on the pickup path, where a task per waited event would cost more
        than the wait itself.
        """
        if self._stopping.is_set() or (event is not None and event.is_set()):
            return
        waiter = self._waiter = self._loop.create_future()
        timer = self._loop.call_later(timeout, self._poke) if timeout is not None else None
        try:
            await waiter
        finally:
            self._waiter = None
            if timer is not None:
                timer.cancel()

    def _poke(self) -> None:
        """Wake the fetch loop if it is waiting (after setting the event it waits for)."""
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def _supervise(self, name: str, fn: Callable[[], Awaitable[None]]) -> None:
        while True:
            try:
                await fn()
                return
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log_event(
                    Event.WORKER_SIDE_TASK_DIED,
                    f"side task {name} died; restarting it",
                    level=ERROR,
                    task=name,
                    error=repr(exc),
                )
                await asyncio.sleep(1.0)

    async def _shutdown(self, notifier: Any, maintenance: Maintenance) -> None:
        self.state = "stopping"
        log_event(
            Event.SHUTDOWN_DRAIN_STARTED,
            "stopping: no more fetching",
            worker_id=self.id,
            running=len(self.running),
            buffered=len(self.buffer),
        )
        if self.buffer:
            jobs = list(self.buffer)
            self.buffer.clear()
            await self._release(jobs)
        tasks = [ex.task for ex in self.running.values() if ex.task is not None]
        grace = 0.0 if self._hurry else self.settings.shutdown_grace_seconds
        if tasks:
            await asyncio.wait(tasks, timeout=grace)
        if self.running:
            log_event(
                Event.SHUTDOWN_GRACE_EXPIRED,
                "grace period over; interrupting running jobs and putting them back to pending",
                level=WARNING,
                count=len(self.running),
            )
            pending = [ex.task for ex in self.running.values() if ex.task is not None]
            for ex in list(self.running.values()):
                ex.stop(StopReason.SHUTDOWN)
                if not ex.in_handler and ex.task is not None:
                    ex.task.cancel()
            if pending:
                await asyncio.wait(pending, timeout=5.0)
        assert self.finalizer is not None
        try:
            await asyncio.wait_for(self.finalizer.drain(), timeout=30.0)
        except TimeoutError:
            log_event(
                Event.FINALIZE_RETRYING,
                "could not record every outcome before exit; rescue will recover those jobs",
                level=ERROR,
            )
        for task in self._side_tasks:
            task.cancel()
        await asyncio.gather(*self._side_tasks, return_exceptions=True)
        await maintenance.close()
        with contextlib.suppress(Exception):
            await notifier.stop()
        with contextlib.suppress(StorageError):
            await self.app.backend.worker_remove(worker_id=self.id)
        self.threads.shutdown(wait=False, cancel_futures=True)
        self.state = "stopped"
        log_event(Event.WORKER_STOPPED, "worker stopped", worker_id=self.id)


def _as_started(job: ClaimedJob, attempt_count: int, started_at: datetime) -> ClaimedJob:
    from dataclasses import replace

    from ..models import JobStatus

    return replace(
        job, status=JobStatus.PROCESSING, attempt_count=attempt_count, started_at=started_at
    )
