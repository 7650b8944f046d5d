"""Health checks: liveness and readiness reports with details, for the worker and The Deck.

Four checks, each ``healthy``, ``degraded`` or ``unhealthy``:

* **storage**: the database answers and its schema is current (``schema_version`` equals
  ``latest_version``);
* **worker**: the worker is running and its loops are beating. An idle worker is healthy: the
  beat is the newest of its last fetch and its last registry write, and the registry loop runs
  every couple of seconds whatever the fetch loop is doing (the reference went stale on idle or
  saturated workers);
* **queue_lag**: the oldest due pending job of each queue against the degraded (5 s) and
  unhealthy (10 s) thresholds. Paused and inactive queues are excluded: waiting there is what an
  operator asked for (the reference counted them);
* **schedules**: no periodic schedule that should fire (neither paused nor orphaned) is more
  than one slot late: the slot after its overdue one has come due too, so nothing is firing it
  (no worker leads, or the leader's scheduler is stuck).

Liveness is the worker check alone (restart me if I am stuck); readiness is every check (send me
work, page someone). A report is unhealthy if any check is, degraded if any is. This module
computes reports from public views (a worker seen through ``WorkerView``: its state, slots and
outage state; the backend's storage observer); it must not reach into a worker's internals, and
serving reports over HTTP is ``chokaq.http``'s job.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from .errors import ConfigurationError
from .periodic import MISFIRE_GRACE_SECONDS, Timing
from .runtime.outage import Outage

if TYPE_CHECKING:
    from .app import App
    from .models import Schedule
    from .storage import Backend

__all__ = [
    "Check",
    "HealthSettings",
    "Report",
    "Status",
    "WorkerBeat",
    "WorkerView",
    "check_queue_lag",
    "check_schedules",
    "check_storage",
    "check_worker",
    "liveness",
    "readiness",
    "schedule_late",
    "schedule_lateness",
]


class Status(enum.StrEnum):
    HEALTHY = "healthy"
    DEGRADED = "degraded"
    UNHEALTHY = "unhealthy"


_RANK = {Status.HEALTHY: 0, Status.DEGRADED: 1, Status.UNHEALTHY: 2}


@dataclass(frozen=True, slots=True)
class HealthSettings:
    """Thresholds, in seconds (defaults as the reference).

    ``worker_heartbeat_timeout_seconds``: a worker whose newest beat is older is unhealthy.
    ``queue_lag_degraded_seconds`` / ``queue_lag_unhealthy_seconds``: the worst queue's oldest
    due pending job waiting longer makes readiness degraded / unhealthy.
    """

    worker_heartbeat_timeout_seconds: float = 30.0
    queue_lag_degraded_seconds: float = 5.0
    queue_lag_unhealthy_seconds: float = 10.0

    def __post_init__(self) -> None:
        if self.worker_heartbeat_timeout_seconds <= 0:
            raise ConfigurationError("health.worker_heartbeat_timeout_seconds: must be > 0")
        if self.queue_lag_degraded_seconds < 0:
            raise ConfigurationError("health.queue_lag_degraded_seconds: must not be negative")
        if self.queue_lag_unhealthy_seconds <= 0:
            raise ConfigurationError("health.queue_lag_unhealthy_seconds: must be > 0")
        if self.queue_lag_unhealthy_seconds < self.queue_lag_degraded_seconds:
            raise ConfigurationError(
                "health.queue_lag_unhealthy_seconds: must be >= queue_lag_degraded_seconds"
            )


@dataclass(frozen=True, slots=True)
class Check:
    """One check's verdict and the figures it was based on."""

    name: str
    status: Status
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Report:
    """Several checks folded into one status; ``http_status`` is 503 only when unhealthy."""

    status: Status
    checks: tuple[Check, ...]
    generated_at: datetime

    @classmethod
    def of(cls, checks: Sequence[Check]) -> Report:
        worst = max((c.status for c in checks), key=_RANK.__getitem__, default=Status.HEALTHY)
        return cls(worst, tuple(checks), datetime.now(UTC))

    @property
    def http_status(self) -> int:
        return 503 if self.status is Status.UNHEALTHY else 200

    def as_json(self) -> dict[str, Any]:
        return {
            "status": self.status.value,
            "generated_at": self.generated_at.isoformat(),
            "checks": {c.name: {"status": c.status.value, **c.details} for c in self.checks},
        }


class WorkerView(Protocol):
    """What the worker check reads of a worker (``chokaq.runtime.worker.Worker`` is one): its
    id, state (``"running"`` when healthy), running executions, concurrency, the monotonic time
    of its last fetch, and its outage state (``outage.down_since``)."""

    @property
    def id(self) -> str: ...
    @property
    def state(self) -> str: ...
    @property
    def running(self) -> Mapping[str, object]: ...
    @property
    def concurrency(self) -> int: ...
    @property
    def last_fetch_at(self) -> float | None: ...
    @property
    def outage(self) -> Outage: ...


class WorkerBeat:
    """Remembers when a worker last wrote its registry row, heard through the storage observer
    of its ``backend``, so that the worker check does not depend on the fetch loop alone."""

    def __init__(self, backend: Backend) -> None:
        self.last_registry_beat: float | None = None
        backend.add_observer(self._observe)

    def _observe(self, operation: str, _seconds: float, error: BaseException | None) -> None:
        if operation == "worker_beat" and error is None:
            self.last_registry_beat = time.monotonic()


async def check_storage(app: App) -> Check:
    """Unhealthy when the database does not answer or its schema is behind (or ahead of) this
    code; the details say which versions."""
    backend = app.backend
    details: dict[str, Any] = {"backend": backend.capabilities.name, "schema": app.schema}
    started = time.perf_counter()
    try:
        await app.open()
        version = await backend.schema_version()
    except Exception as exc:
        details["error"] = f"{type(exc).__name__}: {exc}"
        return Check("storage", Status.UNHEALTHY, details)
    latest = backend.latest_version()
    details.update(
        schema_version=version,
        latest_version=latest,
        latency_seconds=round(time.perf_counter() - started, 4),
    )
    if version != latest:
        details["error"] = f"schema at v{version}, this code needs v{latest}: run chokaq migrate"
        return Check("storage", Status.UNHEALTHY, details)
    return Check("storage", Status.HEALTHY, details)


def check_worker(
    worker: WorkerView,
    beat: WorkerBeat | None = None,
    settings: HealthSettings | None = None,
    *,
    now: float | None = None,
) -> Check:
    """Unhealthy unless the worker is running and its newest beat (fetch or registry write,
    monotonic seconds) is within the timeout. An idle or saturated worker still beats."""
    settings = settings or HealthSettings()
    now = time.monotonic() if now is None else now
    beats = [t for t in (worker.last_fetch_at, beat and beat.last_registry_beat) if t]
    newest = max(beats) if beats else None
    age = None if newest is None else max(0.0, now - newest)
    details: dict[str, Any] = {
        "worker_id": worker.id,
        "state": worker.state,
        "running": len(worker.running),
        "concurrency": worker.concurrency,
        "heartbeat_age_seconds": None if age is None else round(age, 3),
        "heartbeat_timeout_seconds": settings.worker_heartbeat_timeout_seconds,
        "storage_available": worker.outage.down_since is None,
    }
    if worker.state != "running":
        details["error"] = f"worker is {worker.state}"
        return Check("worker", Status.UNHEALTHY, details)
    if age is None or age > settings.worker_heartbeat_timeout_seconds:
        details["error"] = "no recent heartbeat"
        return Check("worker", Status.UNHEALTHY, details)
    if worker.outage.down_since is not None:
        details["error"] = "storage unavailable; the worker is retrying"
        return Check("worker", Status.DEGRADED, details)
    return Check("worker", Status.HEALTHY, details)


async def check_queue_lag(app: App, settings: HealthSettings | None = None) -> Check:
    """The worst active, unpaused queue's oldest due pending job against the thresholds."""
    settings = settings or HealthSettings()
    try:
        await app.open()
        stats = await app.backend.stats_queues()
    except Exception as exc:
        return Check("queue_lag", Status.UNHEALTHY, {"error": f"{type(exc).__name__}: {exc}"})
    considered = [s for s in stats if s.queue.active and not s.queue.paused]
    worst = max(considered, key=lambda s: s.lag_max_seconds, default=None)
    details: dict[str, Any] = {
        "queues": len(considered),
        "excluded_paused_or_inactive": len(stats) - len(considered),
        "degraded_seconds": settings.queue_lag_degraded_seconds,
        "unhealthy_seconds": settings.queue_lag_unhealthy_seconds,
        "worst_queue": worst.queue.name if worst else None,
        "worst_queue_pending": worst.lag_count if worst else 0,
        "worst_queue_max_lag_seconds": round(worst.lag_max_seconds, 3) if worst else 0.0,
    }
    lag = worst.lag_max_seconds if worst else 0.0
    if lag > settings.queue_lag_unhealthy_seconds:
        return Check("queue_lag", Status.UNHEALTHY, details)
    if lag > settings.queue_lag_degraded_seconds:
        return Check("queue_lag", Status.DEGRADED, details)
    return Check("queue_lag", Status.HEALTHY, details)


def schedule_lateness(schedule: Schedule, now: datetime) -> tuple[float, float | None]:
    """How late ``schedule`` is at ``now``: the seconds since its next slot came due (0 while
    it is ahead, or when no slot is coming), and the seconds from that slot to the one after
    it (its period there; None when there is no later slot). A cron period varies: a weekday
    schedule's Friday slot is three days from the next."""
    slot = schedule.next_slot
    if slot is None:
        return 0.0, None
    lag = max(0.0, (now - slot).total_seconds())
    try:
        after = Timing.of(schedule).next_after(slot)
    except (StopIteration, ValueError):
        return lag, None
    return lag, (after - slot).total_seconds()


def schedule_late(schedule: Schedule, now: datetime) -> bool:
    """More than one slot late at ``now``: past its period and past the misfire grace (60 s).
    The grace is there because a slot enqueued within it is on time by the engine's own rule:
    a schedule of a few seconds is not called late for a lag a busy database can cause."""
    lag, period = schedule_lateness(schedule, now)
    return period is not None and lag > max(period, MISFIRE_GRACE_SECONDS)


async def check_schedules(app: App, *, now: datetime | None = None) -> Check:
    """Unhealthy when a schedule that should fire (neither paused nor orphaned) is more than
    one slot late: ``now - next_slot`` is over its period there (``next_after(next_slot) -
    next_slot``) and over the misfire grace (60 s). The details name the late schedules.
    Paused schedules wait because an operator asked; orphaned ones because no running worker
    declares them (``chokaq schedule list`` shows both)."""
    try:
        await app.open()
        schedules = await app.backend.schedules_list(now=now)
    except Exception as exc:
        return Check("schedules", Status.UNHEALTHY, {"error": f"{type(exc).__name__}: {exc}"})
    moment = datetime.now(UTC) if now is None else now
    considered = [s for s in schedules if not s.paused and not s.orphaned]
    late: list[tuple[str, float, float]] = []
    worst: tuple[str, float] | None = None
    for schedule in considered:
        lag, period = schedule_lateness(schedule, moment)
        if worst is None or lag > worst[1]:
            worst = (schedule.name, lag)
        if period is not None and schedule_late(schedule, moment):
            late.append((schedule.name, lag, period))
    late.sort(key=lambda item: -item[1])
    details: dict[str, Any] = {
        "schedules": len(considered),
        "excluded_paused_or_orphaned": len(schedules) - len(considered),
        "late": [name for name, _, _ in late],
        "worst_schedule": worst[0] if worst else None,
        "worst_lag_seconds": round(worst[1], 3) if worst else 0.0,
    }
    if late:
        named = ", ".join(
            f"{name} ({lag:.0f} s late, period {period:g} s)" for name, lag, period in late
        )
        details["error"] = f"more than one slot late: {named}"
        return Check("schedules", Status.UNHEALTHY, details)
    return Check("schedules", Status.HEALTHY, details)


async def liveness(
    worker: WorkerView | None = None,
    beat: WorkerBeat | None = None,
    settings: HealthSettings | None = None,
) -> Report:
    """Is this process making progress? The worker check (a process without a worker, such as
    The Deck, is live while it answers)."""
    if worker is None:
        return Report.of([Check("process", Status.HEALTHY, {"answering": True})])
    return Report.of([check_worker(worker, beat, settings)])


async def readiness(
    app: App,
    worker: WorkerView | None = None,
    beat: WorkerBeat | None = None,
    settings: HealthSettings | None = None,
) -> Report:
    """Storage and schema, the worker (when there is one), queue lag and schedules."""
    checks = [await check_storage(app)]
    if worker is not None:
        checks.append(check_worker(worker, beat, settings))
    if checks[0].status is Status.HEALTHY:
        checks.append(await check_queue_lag(app, settings))
        checks.append(await check_schedules(app))
    return Report.of(checks)
