"""Maintenance run by the elected worker: rescue of abandoned and zombie jobs, retention of
archive and DLQ rows, and the roll-up and pruning of metric buckets.

Leadership is a lease on the database's clock (``chokaq.storage.Leadership``), passed in with
the backend, the settings and the event emitter; never the worker. It is renewed on its own
timer, beside the passes, so a long pass cannot let it lapse; every write of a pass names the
term (``fence=``), so a worker that was frozen or blocked past its lease writes nothing when it
wakes, and a worker whose own renewal is late stops writing before the lease could have gone.
Rescue judges heartbeats only against what this process could see: a heartbeat counts as
written no earlier than when the renewals last found storage again (``Reach``), and a pass
judges as of when it was sent, on the database's clock (``Leadership.clock``), so neither an
outage nor a statement that waited through one makes a live worker's jobs look dead.
Owns the schedule and the leadership log events; the SQL is in the backends.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import KW_ONLY, dataclass, field
from datetime import UTC, datetime, timedelta

from ..errors import LeadershipLostError, StorageError
from ..logs import Event, log_event
from ..models import LeaderTerm, Pillar
from ..settings import WorkerSettings
from ..storage import Backend, Leadership
from .events import Events
from .reach import Reach

# How long a stopping maintenance task waits for its renewal to end.
STOP_SECONDS = 5.0
# How often the leader wakes suspended durable jobs whose time came, and how many per statement.
TIMER_SECONDS = 1.0
WAKE_BATCH = 1000
# A limited key's rate state is dropped this long after its next start came due.
LIMIT_STATE_IDLE_SECONDS = 60.0

__all__ = ["REST_RATIO", "STEP", "Maintenance", "purge_pillar", "run_retention"]


@dataclass(eq=False)
class Maintenance:
    """The elected worker's periodic chores; ``leadership`` is the backend's
    ``leadership("maintenance", holder=worker_id)`` handle."""

    backend: Backend
    settings: WorkerSettings
    leadership: Leadership
    events: Events
    _: KW_ONLY
    worker_id: str
    # Durable job types and their attempts: rescue resumes their zombies (docs/durable.md).
    durable_types: dict[str, int] = field(default_factory=dict)
    leading: bool = field(default=False, init=False)
    reach: Reach = field(init=False)
    _announced: LeaderTerm | None = field(default=None, init=False, repr=False)
    _acquired: asyncio.Event = field(default_factory=asyncio.Event, init=False, repr=False)
    _last_retention: float = field(default=0.0, init=False, repr=False)

    def __post_init__(self) -> None:
        self.reach = Reach(self.settings.leadership_renew_interval)

    async def run(self) -> None:
        """Renew leadership every ``leadership_renew_seconds`` and run a pass every
        ``rescue_interval_seconds`` (at once when leadership is newly won)."""
        holding = asyncio.create_task(self._hold(), name="chokaq-leadership")
        timers = asyncio.create_task(self._timers(), name="chokaq-timers")
        try:
            while True:
                if holding.done():
                    holding.result()  # the renewal died: say so, through the supervisor
                await self.work()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(
                        self._acquired.wait(), self.settings.rescue_interval_seconds
                    )
                self._acquired.clear()
        finally:
            holding.cancel()
            timers.cancel()
            # Bounded: a renewal stuck in a statement must not hold the worker's exit.
            await asyncio.wait([holding, timers], timeout=STOP_SECONDS)

    async def _timers(self) -> None:
        """While leading: every ``TIMER_SECONDS`` (or the rescue interval, when shorter) wake
        the suspended durable jobs whose time came, and now and then tidy kept events and the
        steps and stream items of jobs that are gone. A wake is safe unfenced: it moves only
        rows whose time has come, and two leaders for a moment would move each row once."""
        interval = min(TIMER_SECONDS, self.settings.rescue_interval_seconds)
        last_tidy = 0.0
        while True:
            await asyncio.sleep(interval)
            if self.leadership.term is None:
                continue
            try:
                while len(await self.backend.durable_wake(limit=WAKE_BATCH)) == WAKE_BATCH:
                    pass
                if time.monotonic() - last_tidy >= self.settings.retention_interval_seconds:
                    last_tidy = time.monotonic()
                    await self.backend.durable_tidy()
                    await self.backend.streams_tidy()
            except StorageError as exc:
                log_event(
                    Event.MAINTENANCE_FAILED, "durable wake pass failed", level=30, error=str(exc)
                )

    async def _hold(self) -> None:
        while True:
            await self.renew()
            await asyncio.sleep(self.settings.leadership_renew_interval)

    async def tick(self) -> None:
        """One renewal and one pass (what ``run`` does on its two timers)."""
        await self.renew()
        await self.work()

    async def renew(self) -> None:
        """Take or renew the lease; a failure is logged and leaves the term to run out."""
        reason = "renewal refused"
        sent = time.monotonic()
        try:
            await self.leadership.claim()
        except StorageError as exc:
            reason = "renewal failed"
            self.reach.failed()
            log_event(
                Event.MAINTENANCE_FAILED, "leadership renewal failed", level=30, error=str(exc)
            )
        else:
            self.reach.answered(sent, time.monotonic())
        self._sync(reason)

    async def work(self) -> None:
        """One pass under the current term: rescue, hot tidy, and retention when it is due."""
        self._sync("renewal late")
        term = self.leadership.term
        if term is None:
            return
        try:
            await self.rescue(term)
            await self.backend.jobs_hot_tidy(fence=term)
            settings = self.settings
            if time.monotonic() - self._last_retention >= settings.retention_interval_seconds:
                self._last_retention = time.monotonic()
                await run_retention(self.backend, settings, fence=term)
        except LeadershipLostError as exc:
            self.leadership.lost(exc.term)
            self._sync("write fenced")
        except StorageError as exc:
            self.reach.failed()
            log_event(Event.MAINTENANCE_FAILED, "maintenance pass failed", level=30, error=str(exc))

    def _sync(self, reason: str) -> None:
        """Log the change between the term last announced and the handle's: lost (with why)
        and acquired; a lapsed term retaken by this worker is both, with a new epoch."""
        term, announced = self.leadership.term, self._announced
        if announced is not None and (term is None or term.epoch != announced.epoch):
            log_event(
                Event.LEADERSHIP_LOST,
                "maintenance leadership lost",
                worker_id=self.worker_id,
                leading=False,
                epoch=announced.epoch,
                reason=reason,
            )
        if term is not None and (announced is None or term.epoch != announced.epoch):
            log_event(
                Event.LEADERSHIP_ACQUIRED,
                "maintenance leadership acquired",
                worker_id=self.worker_id,
                leading=True,
                epoch=term.epoch,
            )
            self._acquired.set()
        self._announced = term
        self.leading = term is not None

    async def rescue(self, term: LeaderTerm | None = None) -> None:
        settings = self.settings
        now = self.leadership.clock()
        if now is None:
            return  # never granted, so never fenced either: no pass to make
        # Every pass (seconds apart) would be noise at INFO; its results are logged below.
        log_event(Event.RESCUE_STARTED, "rescue pass", level=10, worker_id=self.worker_id)
        if self.durable_types:
            # Before the rescue, which would dead-letter them as ZOMBIE.
            resumed = await self.backend.durable_resume(
                types=self.durable_types,
                zombie_timeout_seconds=settings.zombie_timeout_seconds,
                now=now,
                reachable_since=self._reachable_since(now),
                fence=term,
            )
            if resumed:
                log_event(
                    Event.ZOMBIES_RESUMED,
                    "durable jobs whose worker died resumed",
                    count=len(resumed),
                    ids=",".join(resumed[:20]),
                )
        result = await self.backend.jobs_rescue(
            fetched_timeout_seconds=settings.fetched_timeout_seconds,
            processing_timeout_seconds=settings.zombie_timeout_seconds,
            now=now,
            reachable_since=self._reachable_since(now),
            fence=term,
        )
        if result.requeued:
            log_event(
                Event.FETCHED_JOBS_RECOVERED,
                "abandoned prefetched jobs back to pending",
                count=len(result.requeued),
            )
        # A release a worker left for later and did not finish (it crashed in between).
        await self.backend.jobs_release_missed(fence=term)
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
        if result.expired:
            log_event(
                Event.JOB_EXPIRED,
                "pending jobs past their expiry moved to the DLQ",
                count=len(result.expired),
                ids=",".join(result.expired[:20]),
            )
            for job_id in result.expired:
                self.events.emit("expired_rescued", job_id=job_id)

    def _reachable_since(self, now: datetime) -> datetime:
        """When this process last regained storage, on the database's clock (``now`` is that
        clock at this moment). Outside a stretch it is ``now`` itself, so that no heartbeat
        counts as missed: its worker may have been unable to write it, as this process was."""
        since = self.reach.since
        if since is None:
            return now
        return now - timedelta(seconds=time.monotonic() - since)

    async def close(self) -> None:
        """Release the term at once (clean shutdown), so a successor need not wait it out. A
        term that lapsed unnoticed (the process was frozen, then stopped before its next pass)
        is logged as lost first, so every grant this worker logged ends with a loss or a
        release."""
        self._sync("renewal late")
        with contextlib.suppress(Exception):
            await self.leadership.release()
        self.leading = False
        self._announced = None


async def run_retention(
    backend: Backend,
    settings: WorkerSettings,
    *,
    now: datetime | None = None,
    fence: LeaderTerm | None = None,
) -> dict[str, int]:
    """Delete old archive and DLQ rows in small batches; roll second buckets into minutes and
    prune old minute buckets, by ``settings``' retention periods, each write fenced by the
    leadership term ``fence`` when given. Lifetime counters are never touched. Returns how many
    rows each step touched."""
    now = now or datetime.now(UTC)
    done = {
        "archive": await purge_pillar(
            backend,
            Pillar.ARCHIVE,
            now - timedelta(days=settings.retention_archive_days),
            rest_ratio=settings.retention_rest_ratio,
            fence=fence,
        ),
        "dlq": await purge_pillar(
            backend,
            Pillar.DLQ,
            now - timedelta(days=settings.retention_dlq_days),
            rest_ratio=settings.retention_rest_ratio,
            fence=fence,
        ),
        "rolled_up": await backend.metrics_rollup(
            older_than=now - timedelta(seconds=settings.metrics_second_buckets_seconds),
            fence=fence,
        ),
        "minute_buckets": await backend.metrics_prune(
            older_than=now - timedelta(days=settings.metrics_minute_buckets_days),
            width_seconds=60,
            fence=fence,
        ),
        # A limited key idle for a minute has its whole burst back: its row says nothing.
        "limit_keys": await backend.limits_tidy(
            older_than=now - timedelta(seconds=LIMIT_STATE_IDLE_SECONDS), fence=fence
        ),
        # An ended uniqueness window is taken over by the next enqueue of its key: drop it.
        "unique_keys": await backend.unique_keys_tidy(older_than=now, fence=fence),
        # Which job superseded which (on_conflict) is kept as long as either job may be.
        "supersessions": await backend.supersessions_tidy(
            older_than=now
            - timedelta(days=max(settings.retention_archive_days, settings.retention_dlq_days)),
            fence=fence,
        ),
        # Which batch each job ran in: kept as long as the minute buckets' history.
        "batches": await backend.batches_tidy(
            older_than=now - timedelta(days=settings.metrics_minute_buckets_days), fence=fence
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
    fence: LeaderTerm | None = None,
) -> int:
    """Delete every ``pillar`` row older than ``older_than``, ``step`` rows per call, resting
    ``rest_ratio`` times each call's duration between calls (each call fenced by ``fence``)."""
    purge: Callable[..., Awaitable[int]] = (
        backend.archive_purge if pillar is Pillar.ARCHIVE else backend.dlq_purge_older
    )
    total = 0
    while True:
        started = time.perf_counter()
        deleted = await purge(older_than=older_than, limit=step, fence=fence)
        total += deleted
        if on_progress is not None:
            on_progress(deleted)
        if deleted < step:
            return total
        if rest_ratio > 0:
            await asyncio.sleep((time.perf_counter() - started) * rest_ratio)
