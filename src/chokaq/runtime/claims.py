"""Claiming work for a worker's free slots: start prefetched jobs first, then claim more
straight into Processing, then refill the prefetch buffer.

The producer never fetches more than its free slots (plus the prefetch); jobs of open circuits
and of paused or inactive queues are left alone (buffered ones are released). It is given the
backend, the settings, the slots, the circuit breakers, the registry (for its view of the
queues) and the worker's ``launch``, never the worker. Owns the claim step only: it neither
runs jobs nor decides their outcome.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field, replace
from datetime import datetime

from ..batches import BatchSpec
from ..logs import Event, log_event
from ..models import Claim, ClaimedJob, FailureReason, JobStatus
from ..settings import WorkerSettings
from ..storage import Backend
from .circuit import CircuitBreakers
from .registry import Registry
from .slots import Slots, release

__all__ = ["Claims"]

WARNING = 30


@dataclass(eq=False)
class Claims:
    """The claim step of one worker's fetch loop; ``launch(job, sent)`` starts a claimed job
    (``sent``: the monotonic time just before the statement that claimed or started it)."""

    backend: Backend
    settings: WorkerSettings
    slots: Slots
    circuits: CircuitBreakers
    registry: Registry
    _: KW_ONLY
    worker_id: str
    launch: Callable[[ClaimedJob, float], None]
    # The worker's events: metrics count the expired jobs a claim buried.
    emit: Callable[..., None] = lambda name, **fields: None
    # The batch types (``@app.job(batch_size=)``) and how each batches, and what starts a
    # claimed batch (``batches.BatchRunner.launch``): their jobs are claimed a batch at a
    # time, never by the plain claim.
    batches: tuple[tuple[str, BatchSpec], ...] = ()
    launch_batch: Callable[[Claim, float], None] = lambda claim, sent: None
    # When a rate limit that held jobs back in the last claim allows the next start (or a
    # batch waiting to fill may be claimed anyway).
    retry_at: datetime | None = field(default=None, init=False)

    async def claim(self, free: int) -> int:
        """Start buffered jobs, then claim more straight into Processing (up to ``free`` in
        all); refill the prefetch buffer. Returns how many jobs were launched."""
        backend = self.backend
        slots = self.slots
        started = 0
        batched, waiting = (await self._claim_batches(free)) if self.batches else (0, None)
        free -= batched
        if slots.buffer:
            started += await self._start_buffered(free)
            free = slots.free
            if started:
                await asyncio.sleep(0)  # let them begin first: see below
        got = 0
        self.retry_at = None
        excluded = self.circuits.blocked()
        if self.batches:
            excluded = [*excluded, *(name for name, _ in self.batches)]
        if free > 0:
            sent = time.monotonic()  # before the statement: each claim is proven from here
            claim = await backend.jobs_claim(
                worker_id=self.worker_id,
                limit=free,
                queues=self.settings.queues,
                exclude_types=excluded,
                start=True,
            )
            jobs = claim.jobs
            self.retry_at = claim.retry_at
            self._buried(claim)
            for job in jobs:
                self.launch(job, sent)
            got = len(jobs)
            if got:
                # The jobs just launched take their first step before the next statement is
                # sent: after an idle spell, sending one wakes the server's process, which
                # costs 0.25-0.3 ms on a virtual machine and would delay every handler's start.
                await asyncio.sleep(0)
        room = self.settings.prefetch - len(slots.buffer)
        if room > 0 and (free <= 0 or got == free):
            more = await backend.jobs_fetch(
                worker_id=self.worker_id,
                limit=room,
                queues=self.settings.queues,
                exclude_types=excluded,
                start=False,
            )
            slots.buffer.extend(more)
        if waiting is not None and (self.retry_at is None or waiting < self.retry_at):
            self.retry_at = waiting
        return got + started + batched

    async def _claim_batches(self, free: int) -> tuple[int, datetime | None]:
        """Claim the ready batches of each batch type whose circuit lets it run, one slot a
        batch, while slots are free (a backlog fills the free slots in one turn, instead of a
        turn, and a plain claim, per batch). Returns how many batches were launched, and when
        the soonest batch left waiting to fill may be claimed anyway."""
        launched = 0
        waiting: datetime | None = None
        blocked = set(self.circuits.blocked())
        for name, spec in self.batches:
            while launched < free and name not in blocked:
                sent = time.monotonic()
                claim = await self.backend.jobs_claim_batch(
                    worker_id=self.worker_id,
                    type=name,
                    limit=spec.size,
                    wait_seconds=spec.wait_seconds,
                    key=spec.key,
                    queues=self.settings.queues,
                )
                self._buried(claim)
                if not claim.jobs:
                    if claim.retry_at is not None and (waiting is None or claim.retry_at < waiting):
                        waiting = claim.retry_at
                    break
                self.launch_batch(claim, sent)
                launched += 1
        return launched, waiting

    def _buried(self, claim: Claim) -> None:
        """Count the jobs a claim took past their expiry (the seam buried them as EXPIRED)."""
        for job in claim.expired:
            self.emit(
                "failed",
                reason=FailureReason.EXPIRED,
                duration=None,
                job_id=job.id,
                type=job.type,
                queue=job.queue,
            )

    async def _start_buffered(self, free: int) -> int:
        backend = self.backend
        take: list[ClaimedJob] = []
        put_back: list[ClaimedJob] = []
        blocked = set(self.circuits.blocked())
        buffer = self.slots.buffer
        queues = self.registry.queues
        while buffer and len(take) < free:
            job = buffer.popleft()
            queue = queues.get(job.queue)
            if job.type in blocked or (queue is not None and (queue.paused or not queue.active)):
                put_back.append(job)
            else:
                take.append(job)
        if put_back:
            await release(backend, put_back, worker_id=self.worker_id)
        if not take:
            return 0
        # Starting is guarded by the lease (a buffered row rescued meanwhile is not started)
        # and sets the heartbeat: it proves each claim it starts, from before it was sent.
        sent = time.monotonic()
        started = await backend.jobs_start_many(leases=[j.lease for j in take])
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
            self.launch(_as_started(job, info.attempt_count, info.started_at), sent)
        return len(started)


def _as_started(job: ClaimedJob, attempt_count: int, started_at: datetime) -> ClaimedJob:
    return replace(
        job, status=JobStatus.PROCESSING, attempt_count=attempt_count, started_at=started_at
    )
