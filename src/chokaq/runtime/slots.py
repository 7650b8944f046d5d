"""A worker's job slots: the executions running now, the prefetch buffer of claimed jobs
waiting for a slot, and how many may run at once.

Owns that bookkeeping, the signal that a slot came free, and the end of the running jobs at
shutdown (``drain``: a grace period, then interruption); ``release`` puts buffered jobs back to
Pending through the backend. It must not claim, start or decide the outcome of a job: the
worker, the executor and the finalizer do.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import Any

from ..errors import StorageError
from ..logs import Event, log_event
from ..models import ClaimedJob
from ..storage import Backend
from .executor import Execution, StopReason

__all__ = ["Slots", "release"]

WARNING = 30


class Slots:
    """Running executions by job id (``running``), the prefetch ``buffer``, and
    ``concurrency``. ``held`` slots are taken by sync handlers' threads that ran on past their
    job's end beyond the overrun bound (``threads.SyncThreads``). ``on_free`` is called whenever
    a slot comes free (after ``freed`` is set), so that a waiting fetch loop wakes."""

    __slots__ = ("buffer", "concurrency", "freed", "held", "on_free", "running", "shared")

    def __init__(self, concurrency: int, on_free: Callable[[], None]) -> None:
        self.running: dict[str, Execution] = {}
        self.buffer: deque[ClaimedJob] = deque()
        self.concurrency = concurrency
        self.held = 0
        # Running jobs that take no slot of their own: every job of a batch but one (a batch
        # is one handler call, so it takes one slot however many jobs it holds).
        self.shared = 0
        self.freed = asyncio.Event()
        self.on_free = on_free

    @property
    def free(self) -> int:
        """Slots not taken by a running execution (a batch's jobs take one together) or a held
        overrun thread (negative after a scale-down)."""
        return self.concurrency - len(self.running) - self.held + self.shared

    def add(self, ex: Execution) -> None:
        """``ex`` takes a slot."""
        self.running[ex.job.id] = ex

    def done(self, ex: Execution) -> None:
        """``ex`` gives its slot back (a no-op for the slot if it was already given back)."""
        if self.running.get(ex.job.id) is ex:
            del self.running[ex.job.id]
        self.freed.set()
        self.on_free()

    def add_batch(self, members: list[Execution]) -> None:
        """The jobs of one batch take one slot together (each is already in ``running``)."""
        self.shared += len(members) - 1

    def done_batch(self, members: list[Execution]) -> None:
        """The jobs of a batch give their one slot back."""
        self.shared -= len(members) - 1
        for ex in members:
            if self.running.get(ex.job.id) is ex:
                del self.running[ex.job.id]
        self.freed.set()
        self.on_free()

    def resize(self, concurrency: int) -> None:
        """Run up to ``concurrency`` jobs at once; running jobs are never interrupted."""
        self.concurrency = concurrency
        self.freed.set()

    def unbuffer(self, drop: Callable[[ClaimedJob], bool]) -> list[ClaimedJob]:
        """Take the buffered jobs ``drop`` picks out of the buffer (order kept for the rest)."""
        keep: list[ClaimedJob] = []
        dropped: list[ClaimedJob] = []
        for job in self.buffer:
            (dropped if drop(job) else keep).append(job)
        if dropped:
            # In place: whoever holds the deque keeps seeing the buffer.
            self.buffer.clear()
            self.buffer.extend(keep)
        return dropped

    def empty_buffer(self) -> list[ClaimedJob]:
        """Take every buffered job."""
        jobs = list(self.buffer)
        self.buffer.clear()
        return jobs

    async def drain(self, grace_seconds: float, hurry: asyncio.Event | None = None) -> None:
        """Shutdown's second phase: let running jobs finish for ``grace_seconds`` (or until
        ``hurry`` is set), then stop the rest (``StopReason.SHUTDOWN``: back to Pending) and
        wait up to 5 s for them to end."""
        tasks = {ex.task for ex in self.running.values() if ex.task is not None}
        if tasks:
            await _wait_unless(tasks, grace_seconds, hurry)
        if not self.running:
            return
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


async def _wait_unless(
    tasks: set[asyncio.Task[None]], timeout: float, hurry: asyncio.Event | None
) -> None:
    """Wait for every task, at most ``timeout`` seconds, and no longer once ``hurry`` is set
    (a second signal during the grace period)."""
    if hurry is None:
        await asyncio.wait(tasks, timeout=timeout)
        return
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    hurried = asyncio.ensure_future(hurry.wait())
    pending: set[asyncio.Future[Any]] = set(tasks)
    try:
        while pending and not hurry.is_set() and (left := deadline - loop.time()) > 0:
            _, pending = await asyncio.wait(
                pending | {hurried}, timeout=left, return_when=asyncio.FIRST_COMPLETED
            )
            pending.discard(hurried)
    finally:
        hurried.cancel()


async def release(backend: Backend, jobs: list[ClaimedJob], *, worker_id: str) -> None:
    """Put prefetched ``jobs`` back to Pending. A storage error is logged, not raised: rescue
    recovers Fetched rows that nobody releases."""
    try:
        released = await backend.jobs_release(leases=[j.lease for j in jobs])
        log_event(
            Event.PREFETCHED_JOB_RELEASED,
            "released prefetched jobs",
            count=len(released),
            worker_id=worker_id,
        )
    except StorageError as exc:
        log_event(
            Event.PREFETCHED_JOB_RELEASE_FAILED,
            "could not release prefetched jobs; rescue will recover them",
            level=WARNING,
            error=str(exc),
            count=len(jobs),
        )
