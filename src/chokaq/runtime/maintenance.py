"""Maintenance run by the elected worker: rescue of abandoned and zombie jobs, retention of
archive and DLQ rows, and the roll-up and pruning of metric buckets.

Leadership comes from the backend (an advisory lock on PostgreSQL) as a handle the worker
passes in, with the backend, the settings and the event emitter; never the worker. Every
statement is guarded, so a second leader would do no harm, only double work. Owns the schedule;
the SQL is in the backends.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

from ..errors import StorageError
from ..logs import Event, log_event
from ..models import Pillar
from ..storage import Backend, Leadership
from .events import Events
from .settings import WorkerSettings

__all__ = ["REST_RATIO", "STEP", "Maintenance", "purge_pillar", "run_retention"]


class Maintenance:
    """The elected worker's periodic chores; ``leadership`` is the backend's
    ``leadership("maintenance")`` handle."""

    def __init__(
        self,
        backend: Backend,
        settings: WorkerSettings,
        leadership: Leadership,
        events: Events,
        *,
        worker_id: str,
    ) -> None:
        self.backend = backend
        self.settings = settings
        self.leadership = leadership
        self.events = events
        self.worker_id = worker_id
        self.leading = False
        self._last_retention = 0.0

    async def run(self) -> None:
        settings = self.settings
        while True:
            try:
                await self.tick()
            except StorageError as exc:
                log_event(
                    Event.MAINTENANCE_FAILED, "maintenance pass failed", level=30, error=str(exc)
                )
                self.leading = False
            await asyncio.sleep(settings.rescue_interval_seconds)

    async def tick(self) -> None:
        """One pass: stay or become leader, then rescue (and retention when it is due)."""
        leading = await self.leadership.try_acquire()
        if leading != self.leading:
            self.leading = leading
            event = Event.LEADERSHIP_ACQUIRED if leading else Event.LEADERSHIP_LOST
            log_event(
                event, "maintenance leadership changed", worker_id=self.worker_id, leading=leading
            )
        if not leading:
            return
        await self.rescue()
        await self.backend.jobs_hot_tidy()
        settings = self.settings
        if time.monotonic() - self._last_retention >= settings.retention_interval_seconds:
            self._last_retention = time.monotonic()
            await run_retention(self.backend, settings)

    async def rescue(self) -> None:
        settings = self.settings
        # Every pass (seconds apart) would be noise at INFO; its results are logged below.
        log_event(Event.RESCUE_STARTED, "rescue pass", level=10, worker_id=self.worker_id)
        result = await self.backend.jobs_rescue(
            fetched_timeout_seconds=settings.fetched_timeout_seconds,
            processing_timeout_seconds=settings.zombie_timeout_seconds,
        )
        if result.requeued:
            log_event(
                Event.FETCHED_JOBS_RECOVERED,
                "abandoned prefetched jobs back to pending",
                count=len(result.requeued),
            )
        if result.zombies:
            log_event(
                Event.ZOMBIES_DEAD_LETTERED,
                "zombie jobs moved to the DLQ",
                level=30,
                count=len(result.zombies),
                ids=",".join(result.zombies[:20]),
            )
            for job_id in result.zombies:
                self.events.emit("zombie", job_id=job_id)

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.leadership.release()


async def run_retention(
    backend: Backend, settings: WorkerSettings, *, now: datetime | None = None
) -> dict[str, int]:
    """Delete old archive and DLQ rows in small batches; roll second buckets into minutes and
    prune old minute buckets, by ``settings``' retention periods. Lifetime counters are never
    touched. Returns how many rows each step touched."""
    now = now or datetime.now(UTC)
    done = {
        "archive": await purge_pillar(
            backend,
            Pillar.ARCHIVE,
            now - timedelta(days=settings.retention_archive_days),
            rest_ratio=settings.retention_rest_ratio,
        ),
        "dlq": await purge_pillar(
            backend,
            Pillar.DLQ,
            now - timedelta(days=settings.retention_dlq_days),
            rest_ratio=settings.retention_rest_ratio,
        ),
        "rolled_up": await backend.metrics_rollup(
            older_than=now - timedelta(seconds=settings.metrics_second_buckets_seconds)
        ),
        "minute_buckets": await backend.metrics_prune(
            older_than=now - timedelta(days=settings.metrics_minute_buckets_days),
            width_seconds=60,
        ),
    }
    if done["rolled_up"]:
        log_event(Event.METRICS_ROLLED_UP, "metric buckets rolled up", buckets=done["rolled_up"])
    if any(done.values()):
        log_event(Event.RETENTION_PURGED, "retention pass", **done)
    return done


# Rows per call of the backend's batched purge; progress is refreshed between calls.
STEP = 1000
# After each call the purge rests this many times as long as the call took, so that on a busy
# database retention takes at most a fifth of one connection's time and the workers keep
# their throughput (bench/retention.py measures it). 0 purges flat out.
REST_RATIO = 4.0


async def purge_pillar(
    backend: Backend,
    pillar: Pillar,
    older_than: datetime,
    on_progress: Callable[[int], None] | None = None,
    step: int = STEP,
    rest_ratio: float = REST_RATIO,
) -> int:
    """Delete every ``pillar`` row older than ``older_than``, ``step`` rows per call, resting
    ``rest_ratio`` times each call's duration between calls."""
    purge: Callable[..., Awaitable[int]] = (
        backend.archive_purge if pillar is Pillar.ARCHIVE else backend.dlq_purge_older
    )
    total = 0
    while True:
        started = time.perf_counter()
        deleted = await purge(older_than=older_than, limit=step)
        total += deleted
        if on_progress is not None:
            on_progress(deleted)
        if deleted < step:
            return total
        if rest_ratio > 0:
            await asyncio.sleep((time.perf_counter() - started) * rest_ratio)
