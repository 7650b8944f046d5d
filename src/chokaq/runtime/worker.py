"""The worker: claims jobs within its free slots, runs them concurrently, heartbeats them,
finalizes their outcomes in batches, and shuts down in two phases.

It owns the fetch loop and the wiring: it builds the runtime parts (slots, outage state, event
emitter, claims, executor, finalizer, heartbeats, registry, maintenance, schedules), hands each
only the narrow collaborators it uses, and supervises the side tasks (if one dies the worker logs it
loudly and restarts it). It sees its app through the ``host.Host`` protocol, never
``chokaq.app``, and talks to storage only through the backend interface; deciding outcomes is
``executor``'s job, maintenance is ``maintenance``'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import socket
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from ..batches import BatchSpec
from ..errors import StorageError
from ..logs import Event, log_event, logger
from ..models import (
    ClaimedJob,
    JobOutcome,
    Move,
    Pillar,
    RetryMove,
    SucceedMove,
    TypeLimit,
    WorkerInfo,
)
from ..settings import WorkerSettings
from ..storage.durable import MAX_STEP_BATCH
from .batches import BatchRunner
from .burst import BurstWatch, Leftover
from .circuit import CircuitBreakers, CircuitState
from .claims import Claims
from .durable import DurableRun
from .events import Events, Listener
from .executor import Execution, Executor, ParentsRead, Result, StopReason
from .finalizer import Finalizer
from .heartbeat import Heartbeats
from .host import Host, JobHandler
from .maintenance import Maintenance
from .outage import Outage
from .recycle import Recycle
from .registry import Registry
from .report import report_outcome
from .scheduler import Scheduler
from .slots import Slots, release
from .steps import StepBatcher
from .streams import StreamWriter
from .threads import SyncThreads
from .unhandled import Unhandled, served_queues

if TYPE_CHECKING:
    from ..storage import Backend

# How long a busy fetch loop waits for more slots to come free before it claims (see
# ``_fetch_loop``): under a millisecond of a job's start, against a claim a slot.
COALESCE_SECONDS = 0.001

# How long shutdown waits for each side task, the lease release and the notifier to stop.
SIDE_TASK_STOP_SECONDS = 10.0

__all__ = ["Worker"]

WARNING = 30
ERROR = 40


H = TypeVar("H", bound=Host)


class Worker(Generic[H]):
    """One worker process's runtime for the app ``H`` (``App.create_worker`` makes a
    ``Worker[App]``). ``run()`` until ``stop()`` (or, in burst mode, until no eligible job is
    left). Listeners added with ``add_listener`` hear every job outcome.

    Public views: ``slots`` (running executions, prefetch buffer, concurrency), ``outage``
    (``down_since``: storage unavailable since, monotonic seconds, or None), ``events``,
    ``circuits``, ``state``, ``last_fetch_at``, once a burst run stopped, ``burst_left``
    (what eligible work it left, and why; empty when none) and, once it stopped to recycle
    (``max_jobs``, ``max_memory_mib``), ``recycled`` (why; None otherwise). Once running,
    ``settings.queues`` holds the queues it serves (None: every queue).
    """

    # Built by run(), once the app is open and its backend known.
    finalizer: Finalizer
    steps: StepBatcher
    executor: Executor
    heartbeats: Heartbeats
    registry: Registry
    claims: Claims
    burst: BurstWatch
    unhandled: Unhandled
    scheduler: Scheduler

    def __init__(self, app: H, settings: WorkerSettings) -> None:
        self.app = app
        self.settings = settings
        self.id = f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.slots = Slots(settings.concurrency, self._poke)
        self.outage = Outage()
        self.events = Events()
        self.circuits = CircuitBreakers(settings.circuit, on_event=self._circuit_event)
        self.threads = SyncThreads(
            settings.sync_threads or settings.concurrency,
            settings.concurrency
            if settings.sync_overrun_threads is None
            else settings.sync_overrun_threads,
            self.slots,
        )
        self.started_at = datetime.now(UTC)
        self.last_fetch_at: float | None = None
        self.state = "starting"
        # What a burst run left behind when it stopped (empty: nothing eligible was left).
        self.burst_left: tuple[Leftover, ...] = ()
        self.recycle = Recycle(settings.max_jobs, settings.max_memory_mib)
        self.recycled: str | None = None
        self._started_jobs = 0
        self._wake = asyncio.Event()
        self._stopping = asyncio.Event()
        self._hurry = False
        self._hurried = asyncio.Event()
        self._stop_reason = "stopped"  # said once, on the WORKER_STOPPED line
        self._side_tasks: list[asyncio.Task[None]] = []
        self._waiter: asyncio.Future[None] | None = None
        self._loop: asyncio.AbstractEventLoop = cast(
            asyncio.AbstractEventLoop, None
        )  # run() sets it

    @property
    def running(self) -> dict[str, Execution]:
        """The executions running now, by job id (``slots.running``)."""
        return self.slots.running

    @property
    def concurrency(self) -> int:
        """How many jobs may run at once (``slots.concurrency``; see ``set_concurrency``)."""
        return self.slots.concurrency

    # -- control ----------------------------------------------------------------------------

    def stop(self, *, hurry: bool = False) -> None:
        """Begin a graceful shutdown (``hurry``: skip the grace period). Safe from signals."""
        if self._stopping.is_set():
            self._hurry = True
        self._hurry = self._hurry or hurry
        if self._hurry:
            self._hurried.set()  # cuts a grace period already under way short too
        self._stopping.set()
        self._poke()

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def set_concurrency(self, n: int) -> None:
        """Change how many jobs run at once; scale-down never interrupts running jobs."""
        n = max(1, min(1000, int(n)))
        if n != self.slots.concurrency:
            log_event(
                Event.WORKER_CAPACITY_CHANGED,
                "concurrency changed",
                worker_id=self.id,
                old=self.slots.concurrency,
                new=n,
            )
            self.slots.resize(n)
            self.threads.resize(n)
        self._poke()

    def add_listener(self, listener: Listener) -> None:
        """``listener(event, fields)`` for job and worker events (metrics hook)."""
        self.events.add(listener)

    def emit(self, name: str, **fields: Any) -> None:
        """Send an event to every listener (``events.emit``)."""
        self.events.emit(name, **fields)

    def info(self) -> WorkerInfo:
        """This worker's row in the workers table, as of now."""
        slots = self.slots
        return WorkerInfo(
            id=self.id,
            hostname=socket.gethostname(),
            pid=os.getpid(),
            queues=tuple(self.settings.queues or ()),
            concurrency=slots.concurrency,
            desired_concurrency=None,
            running=len(slots.running),
            state=self.state,
            started_at=self.started_at,
            heartbeat_at=datetime.now(UTC),
            circuits=json.dumps([c.as_json() for c in self.circuits.snapshot()]),
        )

    # -- main loop --------------------------------------------------------------------------

    async def run(self) -> None:
        """Run until stopped. Opens (and at the end closes) the app if it was not open."""
        owns_app = not self.app.opened
        self._loop = asyncio.get_running_loop()
        await self.app.open()
        backend = self.app.backend
        # From here on ``settings.queues`` is what this worker fetches from (None: every queue),
        # resolved now so that handlers registered after create_worker count too.
        queues = served_queues(self.settings.queues, self.app.handlers, self.app.pipes)
        self.settings = settings = replace(self.settings, queues=queues)
        if queues == ():
            log_event(
                Event.WORKER_SERVES_NOTHING,
                "this app declares no handler and no pipe, so the worker serves no queue "
                "(pass --queues, or '*' for every queue)",
                level=WARNING,
                worker_id=self.id,
            )
        self.unhandled = Unhandled(settings.unknown_type_grace_seconds, self.id)
        verbose = logger.isEnabledFor(10)
        self.finalizer = Finalizer(
            backend, settings.finalize_batch_max, partial(report_outcome, self.events, verbose)
        )
        self.steps = StepBatcher(
            backend,
            min(settings.finalize_batch_max, MAX_STEP_BATCH),
            lambda count: self.emit("steps_recorded", count=count),
        )
        self.heartbeats = Heartbeats(
            backend,
            settings,
            self.slots,
            self.events,
            self.finalizer.submit,
            self.finalizer.retrying,
        )
        self.executor = Executor(
            settings,
            self.app.handlers,
            self.app.pipes,
            self.app.middlewares,
            self.threads,
            worker_id=self.id,
            prove=self.heartbeats.prove,
            parents=partial(read_parents, backend),
            max_result_bytes=backend.settings.limits.max_result_bytes,
            durable=partial(
                DurableRun,
                backend,
                self.steps,
                max_value_bytes=backend.settings.limits.max_result_bytes,
            ),
            streams=partial(StreamWriter, backend),
        )
        self.registry = Registry(
            backend,
            settings,
            self.slots,
            self.outage,
            self.circuits,
            worker_id=self.id,
            row=self.info,
            resize=self.set_concurrency,
            limits=[
                TypeLimit(handle.name, handle.rate_limit, handle.partition_concurrency)
                for handle in self.app.handlers.values()
            ],
        )
        batches = BatchRunner(
            self.executor,
            self.slots,
            self.circuits,
            self.finalizer.submit,
            self._track,
            self.emit,
            settings.circuit_delay_seconds,
        )
        self.claims = Claims(
            backend,
            settings,
            self.slots,
            self.circuits,
            self.registry,
            worker_id=self.id,
            launch=self._launch,
            emit=self.emit,
            batches=batch_specs(self.app.handlers),
            launch_batch=batches.launch,
        )
        self.burst = BurstWatch(backend, settings, self.circuits, self.executor)
        notifier = backend.notifier()
        listening = False
        try:
            await notifier.start(self._on_jobs, self._on_cancel)
            listening = True
        except Exception as exc:
            log_event(
                Event.WORKER_LISTEN_FAILED,
                "cannot listen for notifications yet; polling meanwhile",
                level=WARNING,
                error=str(exc),
            )
        leadership = backend.leadership(
            "maintenance", holder=self.id, lease_seconds=settings.leadership_lease_seconds
        )
        maintenance = Maintenance(
            backend,
            settings,
            leadership,
            self.events,
            worker_id=self.id,
            durable_types=durable_types(self.app.handlers, settings),
        )
        # The same term elects the worker that fires periodic schedules (of every service
        # sharing the store, not only this app's: a schedule's row says what to enqueue).
        self.scheduler = Scheduler(
            backend, settings, self.app.periodics, leadership, self.events, worker_id=self.id
        )
        supervised: list[tuple[str, Callable[[], Awaitable[None]]]] = [
            ("finalizer", self.finalizer.run),
            ("steps", self.steps.run),
            ("heartbeat", self.heartbeats.run),
            ("watchdog", self.heartbeats.watchdog),
            ("registry", self.registry.run),
            ("maintenance", maintenance.run),
            ("schedules", self.scheduler.run),
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
            queues="*" if settings.queues is None else ",".join(settings.queues),
            concurrency=self.slots.concurrency,
            listening=listening,
            backend=backend.capabilities.name,
        )
        try:
            # Passed even when the first LISTEN failed: it may listen later (``healthy``).
            await self._fetch_loop(notifier)
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
        slots = self.slots
        failures = 0
        recycle = self.recycle
        while not self._stopping.is_set():
            free = slots.free
            if recycle.active:
                reason = recycle.reason(self._started_jobs)
                if reason is not None:
                    await self._recycle(reason)
                    break
                free = recycle.budget(self._started_jobs, free)
            if free <= 0:
                slots.freed.clear()
                await self._wait(slots.freed, None)
                continue
            if free < slots.concurrency // 2 and slots.running:
                # Busy: more slots are about to come free (sync handlers' threads end one by
                # one). Wait briefly for them, so that one claim takes them all instead of
                # one claim a slot: a claim costs the server about what ten rows do.
                await self._gather_free(COALESCE_SECONDS)
                free = slots.free
                if recycle.active:
                    free = recycle.budget(self._started_jobs, free)
                if free <= 0:
                    continue
            self._wake.clear()
            try:
                await self.registry.declare_limits()  # before the first claim; then a no-op
                got = await self.claims.claim(free)
                self.last_fetch_at = time.monotonic()
            except StorageError as exc:
                failures += 1
                self.outage.trouble(exc)
                await self._wait(
                    None, min(5.0, 0.1 * 2 ** min(failures, 6)) * random.uniform(0.5, 1)
                )
                continue
            if failures:
                failures = 0
                self.outage.recovered()
            if got >= free:
                continue  # more work is likely waiting
            if settings.burst and got == 0 and await self._burst_idle():
                verdict = await self.burst.verdict()
                if verdict.wait_seconds is not None:
                    await self._wait(self._wake, verdict.wait_seconds)
                    continue
                self.burst_left = verdict.left
                self.burst.report(verdict.left, self.id)
                self._stop_reason = (
                    "burst finished: work left"
                    if verdict.left
                    else "burst finished: no eligible job left"
                )
                self.stop()
                break
            if got:
                continue
            # Only a backend that notifies across processes lets an idle worker sleep long.
            healthy = notifier is not None and notifier.healthy and notifier.cross_process
            wait = self._poll_interval(healthy)
            retry_at = self.claims.retry_at
            if retry_at is not None:  # a rate held jobs back: come back when it allows one
                wait = min(wait, max(0.001, retry_at.timestamp() - time.time()))
            await self._wait(self._wake, wait)

    async def _gather_free(self, seconds: float) -> None:
        """Wait up to ``seconds`` while jobs run and fewer than half the slots are free (every
        freed slot wakes the wait to look again)."""
        slots = self.slots
        deadline = self._loop.time() + seconds
        while (
            slots.running
            and slots.free < slots.concurrency // 2
            and not self._stopping.is_set()
            and (left := deadline - self._loop.time()) > 0
        ):
            await self._wait(None, left)

    async def _recycle(self, reason: str) -> None:
        """Stop fetching, let the running jobs finish (their own timeouts, not the shutdown
        grace: recycling is routine, nothing is in a hurry), then stop as recycled."""
        log_event(Event.WORKER_RECYCLING, f"recycling: {reason}", worker_id=self.id, reason=reason)
        slots = self.slots
        if slots.buffer:
            await self._release(slots.empty_buffer())
        while slots.running and not self._stopping.is_set():
            slots.freed.clear()
            await self._wait(slots.freed, None)
        if not self._stopping.is_set():  # a signal meanwhile makes it a plain stop
            self.recycled = reason
            self._stop_reason = f"recycled: {reason}"
            self.stop()

    async def _release(self, jobs: list[ClaimedJob]) -> None:
        await release(self.app.backend, jobs, worker_id=self.id)

    async def _burst_idle(self) -> bool:
        """In burst mode: nothing running, buffered or waiting to be finalized, and a fresh
        fetch finds nothing."""
        slots = self.slots
        while slots.running or slots.buffer:
            slots.freed.clear()
            await self._wait(slots.freed, 0.05)
            if slots.buffer and slots.free > 0:
                return False
        await self.finalizer.drain()
        return await self.claims.claim(slots.concurrency) == 0

    def _launch(self, job: ClaimedJob, sent: float) -> None:
        ex = self._track(job, sent)
        ex.task = self._loop.create_task(self._run_one(ex))

    def _track(self, job: ClaimedJob, sent: float) -> Execution:
        """A claimed job, running from now on: its execution, proof, heartbeat and slot."""
        ex = self.executor.prepare(job, self.registry.queues.get(job.queue))
        self._started_jobs += 1
        ex.proof_until = sent + ex.lease_seconds
        ex.next_beat = ex.started + self.heartbeats.interval()
        context = ex.context
        context._loop = self._loop
        context._beat = partial(self.heartbeats.request, ex)
        self.slots.running[job.id] = ex
        if self.events.listeners:
            due = job.scheduled_at or job.created_at
            lag = ((job.started_at or datetime.now(UTC)) - due).total_seconds()
            self.events.emit(
                "started", job_id=job.id, type=job.type, queue=job.queue, lag=max(0.0, lag)
            )
        return ex

    async def _run_one(self, ex: Execution) -> None:
        job = ex.job
        move: Move | None
        if ex.handle is None:  # no handler for its type, no pipe for its queue: not ours
            move = self.unhandled.move(job, datetime.now(UTC))
            self.slots.done(ex)
            self.finalizer.submit(move, ex)
            return
        permit = self.circuits.acquire(job.type)
        if permit == 0:
            # Progress for a burst is a job run under a closed circuit (or a probe that
            # closes it, below): a failing probe every break would otherwise restart the
            # burst's horizon for ever, one dead-lettered job at a time.
            self.burst.progressed()
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
                move = await self.executor.execute(ex)
            except asyncio.CancelledError:
                self.circuits.release(job.type, permit)
                self.slots.done(ex)
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
            # A Retry the handler returned is a deferral it chose, and a stop (shutdown) is the
            # worker's: neither says anything about the dependency the circuit guards.
            judged = ex.result not in _NOT_JUDGED
            self.circuits.report(job.type, move, permit, judged=judged)
            if permit and type(move) is SucceedMove:
                self.burst.progressed()
        self.slots.done(ex)
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
        self.finalizer.submit(move, ex)

    # -- notifications ----------------------------------------------------------------------

    def _on_jobs(self, queue: str) -> None:
        # An empty name means "some queue": the notifier could not say which.
        if not queue or self.settings.queues is None or queue in self.settings.queues:
            self._wake.set()
            self._poke()

    def _on_cancel(self, job_id: str) -> None:
        if not job_id:  # some job, the notifier could not say which: ask for all of ours
            for running in self.slots.running.values():
                self.heartbeats.request(running)
            return
        ex = self.slots.running.get(job_id)
        if ex is not None:
            log_event(Event.JOB_CANCEL_REQUESTED, "cancel requested", job_id=job_id)
            self.heartbeats.request(ex)

    def _circuit_event(self, key: str, state: CircuitState, event: str) -> None:
        self.events.emit("circuit", key=key, state=state.value, event=event)

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
        slots = self.slots
        log_event(
            Event.SHUTDOWN_DRAIN_STARTED,
            "stopping: no more fetching",
            worker_id=self.id,
            running=len(slots.running),
            buffered=len(slots.buffer),
        )
        if slots.buffer:
            await self._release(slots.empty_buffer())
        await slots.drain(
            0.0 if self._hurry else self.settings.shutdown_grace_seconds, self._hurried
        )
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
        # Bounded: a side task that does not stop (stuck in a statement) must not keep the
        # worker from exiting; its lease runs out and its jobs are rescued.
        _, stuck = await asyncio.wait(self._side_tasks, timeout=SIDE_TASK_STOP_SECONDS)
        for task in stuck:
            log_event(
                Event.WORKER_SIDE_TASK_DIED,
                f"side task {task.get_name()} did not stop in time; leaving it",
                level=ERROR,
                task=task.get_name(),
                error="did not stop",
            )
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(maintenance.close(), SIDE_TASK_STOP_SECONDS)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(notifier.stop(), SIDE_TASK_STOP_SECONDS)
        with contextlib.suppress(StorageError):
            await self.app.backend.worker_remove(worker_id=self.id)
        self.threads.shutdown()
        self.state = "stopped"
        log_event(
            Event.WORKER_STOPPED,
            f"worker stopped ({self._stop_reason})",
            worker_id=self.id,
            reason=self._stop_reason,
        )


# Outcomes that say nothing about the dependency a circuit guards: a Retry the handler chose, a
# stop (shutdown, lost lease) and a durable job's suspension.
_NOT_JUDGED = frozenset({Result.RETURNED_RETRY, Result.STOPPED, Result.SUSPENDED})


def durable_types(handlers: Mapping[str, JobHandler], settings: WorkerSettings) -> dict[str, int]:
    """The durable job types of ``handlers`` and the attempts each may use (its handler's
    ``max_attempts``, else its retry policy's, else the worker's): what rescue resumes."""
    return {
        name: handle.max_attempts or (handle.retry or settings.retry).max_attempts
        for name, handle in handlers.items()
        if getattr(handle, "durable", False)
    }


def batch_specs(handlers: Mapping[str, JobHandler]) -> tuple[tuple[str, BatchSpec], ...]:
    """The batch types among ``handlers`` and how each batches (``@app.job(batch_size=)``)."""
    return tuple(
        (name, spec)
        for name, handle in handlers.items()
        if (spec := getattr(handle, "batch", None)) is not None
    )


async def read_parents(backend: Backend, job_id: str) -> ParentsRead:
    """How a job's parents ended, in one query: the return values of those that succeeded
    (JSON decoded; None for a parent whose result was None or not kept) and every parent's
    outcome, by parent id (``JobContext.parent_results`` and ``parent_outcomes``), and, for a
    job enqueued with ``pass_results``, the results in the order of its ``after`` (None for a
    parent that has not succeeded: it ran on any outcome, or was requeued or purged since)."""
    results: dict[str, Any] = {}
    outcomes: dict[str, JobOutcome] = {}
    passed: list[Any] = []
    for parent in await backend.job_parent_outcomes(id=job_id):
        value = None
        if parent.outcome is not None:
            outcomes[parent.id] = parent.outcome
            if parent.outcome.pillar is Pillar.ARCHIVE:
                result = parent.outcome.result
                value = results[parent.id] = None if result is None else json.loads(result)
        if parent.argument is not None:
            passed.append(value)
    return ParentsRead(results, outcomes, tuple(passed))
