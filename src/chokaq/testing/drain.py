"""``run_until_idle``: run a worker until nothing it can run is pending, moving a fake clock
instead of sleeping for delayed jobs and retries.

It runs burst passes of the app's own worker (real claims, real retries, real results) and,
when only jobs due later are left, brings their due times forward through the storage seam's
``jobs_advance`` as if the clock had moved on. It must not reach into the worker's internals
or hold SQL; it is for tests, never for production stores (it rewrites due times).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ..app import App
from ..logs import Event, logger
from ..models import PendingGroup, Summary
from ..runtime.burst import Leftover

__all__ = ["Drained", "run_until_idle"]

# A burst pass waits for nothing that falls due (the clock is moved instead).
_HORIZON_SECONDS = 0.001
# How far past the next due time the clock is moved, doubled after a pass that ran nothing:
# the store's clock (PostgreSQL's now()) may lag the process's.
_MARGIN_SECONDS = 0.01


@dataclass(frozen=True, slots=True)
class Drained:
    """What ``run_until_idle`` did: executions that succeeded, failed (to the DLQ) and were
    scheduled to run again (``retried``), how far it moved the clock (``advanced_seconds``),
    how many burst passes it ran, and the Pending jobs it left (``left``: of a type the app has
    no handler for, or due but not claimable; jobs of paused queues are not counted)."""

    succeeded: int
    failed: int
    retried: int
    advanced_seconds: float
    passes: int
    left: tuple[Leftover, ...] = ()

    @property
    def runs(self) -> int:
        """Executions that ended (succeeded, failed or retried)."""
        return self.succeeded + self.failed + self.retried


async def run_until_idle(
    app: App,
    *,
    queues: Sequence[str] | None = None,
    max_jobs: int = 10_000,
    timeout_seconds: float = 60.0,
    **worker_overrides: Any,
) -> Drained:
    """Run ``app``'s worker (burst passes; ``worker_overrides`` are further ``WorkerSettings``
    fields) until no job it has a handler for is Pending in ``queues`` (None: the queues the
    app's handlers declare), including jobs delayed or scheduled for a retry: when only those
    are left, their due times are brought forward by the time to the next one (the fake clock
    moves; nothing sleeps). Returns a ``Drained`` summary.

    Raises ``TimeoutError`` when not idle within ``timeout_seconds`` (real time), and
    ``RuntimeError`` after more than ``max_jobs`` executions (a job that enqueues itself for
    ever). Counts are read from the store's lifetime counters, so another worker on the same
    store would be counted too."""
    await app.open()
    backend = app.backend
    overrides: dict[str, Any] = {
        "burst": True,
        "burst_horizon_seconds": _HORIZON_SECONDS,
        **worker_overrides,
    }
    if queues is not None:
        overrides["queues"] = tuple(queues)
    served = _served(app, overrides.get("queues", app.worker_settings.queues))
    deadline = time.monotonic() + timeout_seconds
    start = await backend.stats_summary()
    last = start
    advanced = 0.0
    margin = _MARGIN_SECONDS
    passes = idle_passes = 0
    quiet = _Quiet()
    logger.addFilter(quiet)
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"run_until_idle: not idle within {timeout_seconds} s")
            worker = app.create_worker(**overrides)
            quiet.workers.add(worker.id)
            try:
                await asyncio.wait_for(worker.run(), remaining)
            except TimeoutError:
                raise TimeoutError(f"run_until_idle: not idle within {timeout_seconds} s") from None
            passes += 1
            summary = await backend.stats_summary()
            if _runs(start, summary) > max_jobs:
                raise RuntimeError(
                    f"run_until_idle: more than max_jobs={max_jobs} executions and still not idle"
                )
            progressed = _runs(last, summary) > 0
            last = summary
            margin = _MARGIN_SECONDS if progressed else margin * 2
            groups = await _runnable(app, served)
            idle_passes = 0 if progressed else idle_passes + 1
            if any(g.due for g in groups):
                # Due, yet two passes ran nothing: not claimable (a bulkhead, a limit, another
                # worker). One such pass may only have ended just before a job fell due.
                if idle_passes < 2:
                    continue
                break
            later = [g for g in groups if g.next_due_at is not None]
            if not later:
                break
            soonest = min(g.next_due_at for g in later if g.next_due_at is not None)
            shift = max((soonest - datetime.now(UTC)).total_seconds(), 0.0) + margin
            moved = await backend.jobs_advance(
                seconds=shift, queues=sorted({g.queue for g in later})
            )
            if not moved:
                break  # what was due later has gone meanwhile (another worker, a cancel)
            advanced += shift
    finally:
        logger.removeFilter(quiet)
    end = await backend.stats_summary()
    return Drained(
        succeeded=end.succeeded_total - start.succeeded_total,
        failed=end.failed_total - start.failed_total,
        retried=end.retried_total - start.retried_total,
        advanced_seconds=advanced,
        passes=passes,
        left=await _left(app, served),
    )


class _Quiet(logging.Filter):
    """Drops the "burst stopped with work left" line of the drain's own passes: what they leave
    is due later, and the drain moves the clock to it."""

    def __init__(self) -> None:
        super().__init__()
        self.workers: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        fields = getattr(record, "chokaq", None)
        return not (
            isinstance(fields, dict)
            and fields.get("event_id") == Event.WORKER_BURST_WORK_LEFT
            and fields.get("worker_id") in self.workers
        )


def _runs(before: Summary, after: Summary) -> int:
    return (
        after.succeeded_total
        - before.succeeded_total
        + after.failed_total
        - before.failed_total
        + after.retried_total
        - before.retried_total
    )


def _handles(app: App, group: PendingGroup) -> bool:
    return group.type in app.handlers or group.queue in app.pipes


async def _eligible(app: App, served: set[str] | None) -> list[PendingGroup]:
    """The Pending groups of the served queues (None: every queue) that are neither paused nor
    inactive."""
    backend = app.backend
    info = {q.name: q for q in await backend.queue_list()}
    names = sorted(served) if served is not None else None
    groups = []
    for group in await backend.jobs_pending_groups(queues=names):
        q = info.get(group.queue)
        if q is None or not (q.paused or not q.active):
            groups.append(group)
    return groups


def _served(app: App, queues: Sequence[str] | None) -> set[str] | None:
    """The queues a worker of ``app`` told ``queues`` serves (None: every queue)."""
    if queues is not None:
        return None if "*" in queues else set(queues)
    return {h.queue for h in app.handlers.values()} | set(app.pipes)


async def _runnable(app: App, served: set[str] | None) -> list[PendingGroup]:
    return [g for g in await _eligible(app, served) if _handles(app, g)]


async def _left(app: App, served: set[str] | None) -> tuple[Leftover, ...]:
    left = []
    for group in await _eligible(app, served):
        if not _handles(app, group):
            left.append(
                Leftover(
                    group.queue,
                    group.type,
                    group.due + group.waiting + group.later,
                    "no_handler",
                    group.next_due_at,
                )
            )
        elif group.due:
            left.append(Leftover(group.queue, group.type, group.due, "unclaimable"))
    return tuple(left)
