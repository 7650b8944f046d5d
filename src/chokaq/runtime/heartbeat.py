"""Heartbeats and the timeout watchdog of a worker's running jobs.

Every running job heartbeats at a jittered interval, in one round trip for all jobs due; an
acknowledgement that the lease is gone stops the job (its outcome is no longer ours), and a
cancel request stops it as CANCELLED. A job that finished but whose outcome the finalizer keeps
for a retry (storage was out of reach) is heartbeated at the same rate until its move applies:
it is still this worker's, and rescue must not take it for a zombie. The watchdog enforces
execution timeouts with one timer for all jobs. It is given the backend, the settings, the
slots, the event emitter and the finalizer's ``submit`` and ``retrying``, never the worker.
Owns neither the jobs nor their outcomes: it only stops them (and records the timeout of a job
it abandons).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import StorageError
from ..logs import Event, log_event
from ..models import FailMove, FailureReason, Heartbeat, Lease, Move
from ..settings import WorkerSettings
from ..storage import Backend
from .events import Events
from .executor import Execution, StopReason
from .slots import Slots

__all__ = ["ABANDON_AFTER_SECONDS", "WATCHDOG_SECONDS", "Heartbeats"]

WARNING = 30
ERROR = 40
WATCHDOG_SECONDS = 0.05
ABANDON_AFTER_SECONDS = 10.0


@dataclass(eq=False)
class Heartbeats:
    """The heartbeat and watchdog side tasks of one worker. ``submit(move, ex)`` hands the
    outcome of an abandoned job to the finalizer; ``held()`` lists the leases of finished jobs
    whose outcomes wait for a retry."""

    backend: Backend
    settings: WorkerSettings
    slots: Slots
    events: Events
    submit: Callable[[Move, Any], None]
    held: Callable[[], list[Lease]]
    now_event: asyncio.Event = field(default_factory=asyncio.Event, init=False)
    _next_held: float = field(default=0.0, init=False, repr=False)
    _proving: list[tuple[Execution, asyncio.Future[tuple[StopReason, str | None] | None]]] = field(
        default_factory=list, init=False, repr=False
    )

    def request(self, ex: Execution) -> None:
        """Heartbeat ``ex`` at once (progress moved, a long step starts, a cancel was heard)."""
        ex.beat_now = True
        self.now_event.set()

    def interval(self) -> float:
        settings = self.settings
        return random.uniform(settings.heartbeat_min_seconds, settings.heartbeat_max_seconds)

    async def prove(self, ex: Execution) -> tuple[StopReason, str | None] | None:
        """Check that ``ex``'s claim is still held, just before its handler starts: None when
        it is (its proof is renewed), else why it must not start (LEASE_LOST; CANCELLED and
        who asked; UNPROVEN when storage could not answer). Executions that ask in the same
        loop step share one heartbeat statement."""
        future: asyncio.Future[tuple[StopReason, str | None] | None]
        future = asyncio.get_running_loop().create_future()
        self._proving.append((ex, future))
        if len(self._proving) == 1:
            asyncio.get_running_loop().call_soon(self._prove_batch)
        return await future

    def _prove_batch(self) -> None:
        batch, self._proving = self._proving, []
        task = asyncio.get_running_loop().create_task(self._prove_all(batch))
        task.add_done_callback(_proved)

    async def _prove_all(
        self,
        batch: list[tuple[Execution, asyncio.Future[tuple[StopReason, str | None] | None]]],
    ) -> None:
        sent = time.monotonic()
        answers: list[tuple[StopReason, str | None] | None]
        try:
            acks = await self.backend.jobs_heartbeat(
                beats=[Heartbeat(ex.job.lease, ex.context.progress) for ex, _ in batch]
            )
        except BaseException as exc:
            if not isinstance(exc, StorageError):
                for _, future in batch:
                    if not future.done():
                        future.set_exception(exc)
                raise
            answers = [(StopReason.UNPROVEN, None)] * len(batch)
        else:
            answers = []
            for (ex, _), ack in zip(batch, acks, strict=True):
                if not ack.owned:
                    answers.append((StopReason.LEASE_LOST, None))
                elif ack.cancel_requested:
                    answers.append((StopReason.CANCELLED, ack.cancel_requested_by))
                else:
                    ex.proof_until = sent + ex.lease_seconds
                    answers.append(None)
        for (ex, future), answer in zip(batch, answers, strict=True):
            if answer is not None:
                log_event(
                    Event.JOB_NOT_STARTED,
                    "claim not proven held when the handler was to start; not started",
                    level=WARNING,
                    job_id=ex.job.id,
                    reason=answer[0].value,
                )
            if not future.done():
                future.set_result(answer)

    async def run(self) -> None:
        backend = self.backend
        running = self.slots.running
        while True:
            self.now_event.clear()
            now = time.monotonic()
            due = [
                ex
                for ex in running.values()
                if (ex.beat_now or ex.next_beat <= now) and ex.stop_reason is None
            ]
            if due:
                for ex in due:
                    ex.beat_now = False
                    ex.next_beat = now + self.interval()
                beats = [Heartbeat(ex.job.lease, ex.context.progress) for ex in due]
                sent = time.monotonic()
                try:
                    acks = await backend.jobs_heartbeat(beats=beats)
                except StorageError as exc:
                    self._failed(due, exc)
                else:
                    for ex, ack in zip(due, acks, strict=True):
                        ex.beat_failures = 0
                        if not ack.owned:
                            ex.stop(StopReason.LEASE_LOST)
                        elif ack.cancel_requested:
                            ex.stop(StopReason.CANCELLED, ack.cancel_requested_by)
                        else:
                            ex.proof_until = sent + ex.lease_seconds
            await self._beat_held(now)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.now_event.wait(), timeout=0.5)

    async def _beat_held(self, now: float) -> None:
        """Heartbeat the finished jobs whose outcomes wait for a retry, once an interval. The
        acks ask nothing of us: a lease found lost is the refused move's to report, and a
        cancel request comes too late for a job that has finished. A failure is not logged
        here: the finalizer reports the same outage."""
        if now < self._next_held:
            return
        leases = self.held()
        if not leases:
            return
        self._next_held = now + self.interval()
        size = self.backend.settings.limits.max_batch
        with contextlib.suppress(StorageError):
            for start in range(0, len(leases), size):
                chunk = leases[start : start + size]
                await self.backend.jobs_heartbeat(beats=[Heartbeat(lease) for lease in chunk])

    def _failed(self, due: list[Execution], exc: Exception) -> None:
        settings = self.settings
        threshold = settings.heartbeat_failure_threshold
        for ex in due:
            ex.beat_failures += 1
            self.events.emit(
                "heartbeat_failed", job_id=ex.job.id, type=ex.job.type, queue=ex.job.queue
            )
            log_event(
                Event.JOB_HEARTBEAT_FAILED,
                "heartbeat failed",
                level=WARNING,
                job_id=ex.job.id,
                failures=ex.beat_failures,
                error=str(exc),
            )
            if ex.beat_failures >= threshold:
                log_event(
                    Event.JOB_HEARTBEAT_THRESHOLD,
                    "heartbeat failure threshold reached",
                    level=ERROR,
                    job_id=ex.job.id,
                    cancelling=settings.cancel_on_heartbeat_failure,
                )
                if settings.cancel_on_heartbeat_failure:
                    ex.stop(StopReason.HEARTBEAT_FAILURE)
                else:
                    ex.beat_failures = 0  # keep running; rescue is the final authority

    async def watchdog(self) -> None:
        """Enforce execution timeouts: one timer for every running job, checked every
        ``WATCHDOG_SECONDS`` (a job is stopped at most that late), instead of a timer per job."""
        while True:
            self.check_timeouts(time.monotonic())
            await asyncio.sleep(WATCHDOG_SECONDS)

    def check_timeouts(self, now: float) -> None:
        """Stop jobs past their timeout; abandon one that outlived it by 10 s without
        returning (it ignored cancellation): record its timeout and free the slot."""
        for ex in list(self.slots.running.values()):
            clock = ex.clock
            if clock is None or ex.abandoned:
                continue  # not counting yet (or waiting for a thread)
            overrun = now - clock - ex.timeout_seconds
            if overrun < 0:
                continue
            if ex.stop_reason is None:
                ex.stop(StopReason.TIMEOUT)
            if overrun < ABANDON_AFTER_SECONDS:
                continue
            ex.abandoned = True
            self.slots.done(ex)
            log_event(
                Event.JOB_SYNC_OVERRAN,
                "job ignored its timeout; abandoned",
                level=ERROR,
                job_id=ex.job.id,
                timeout=ex.timeout_seconds,
            )
            self.submit(
                FailMove(
                    ex.job.lease,
                    FailureReason.TIMEOUT,
                    f"Timeout: the handler ran past its execution timeout of "
                    f"{ex.timeout_seconds:g} s and did not stop when cancelled",
                    duration_seconds=now - ex.started,
                ),
                ex,
            )


def _proved(task: asyncio.Task[None]) -> None:
    # A failure other than storage's was handed to every waiting execution already; this
    # only keeps asyncio from reporting it a second time as never retrieved.
    if not task.cancelled():
        task.exception()
