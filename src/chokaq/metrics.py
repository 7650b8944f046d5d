"""Prometheus metrics: a private registry per worker (or Deck) fed by the runtime's hooks.

``WorkerMetrics`` listens to a worker's job and schedule events (``worker.add_listener``), to
its storage calls (``backend.add_observer``, the one instrumentation point) and to enqueues made
through its App (``app.after_enqueue``), and renders the text exposition format.
``StoreMetrics`` reads the database at scrape time (queue depth, lag, lifetime counters,
schedules' lag and states) for processes that run no jobs, such as The Deck. Label values pass
a cardinality budget: past it, new values become ``other``.

This module owns metric names and labels; it must not decide outcomes or touch SQL. Every
registry is private (``CollectorRegistry``), so tests and several workers in one process never
share counters.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from .errors import ConfigurationError
from .models import DurableCounts, EnqueueResult, LimitInfo, NewJob, Schedule
from .rates import RATE_WINDOW_SECONDS, check_rate

if TYPE_CHECKING:
    from .app import App
    from .runtime.worker import Worker

__all__ = [
    "CONTENT_TYPE",
    "LabelBudget",
    "MetricsSettings",
    "StoreMetrics",
    "WorkerMetrics",
    "asgi_endpoint",
]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900)
# Batch sizes: 1 to the largest batch_size allowed (10,000).
BATCH_SIZE_BUCKETS = (1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000)
LAG_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 1800, 3600)
STORAGE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5)


@dataclass(frozen=True, slots=True)
class MetricsSettings:
    """Cardinality budgets per label family (defaults as the reference).

    The first ``max_*_values`` distinct values of a family pass; later new values are reported
    as ``overflow_value``. Values are trimmed and cut to ``max_label_length`` characters; a blank
    value is ``unknown_value``. ``max_reason_values`` also bounds transitions, circuit states and
    circuit events; ``max_type_values`` also bounds schedule names (a family of their own, so
    schedules do not use up the job types' budget).
    """

    max_queue_values: int = 100
    max_type_values: int = 500
    max_error_values: int = 100
    max_reason_values: int = 50
    max_label_length: int = 128
    unknown_value: str = "unknown"
    overflow_value: str = "other"

    def __post_init__(self) -> None:
        for name in (
            "max_queue_values",
            "max_type_values",
            "max_error_values",
            "max_reason_values",
            "max_label_length",
        ):
            if getattr(self, name) < 1:
                raise ConfigurationError(f"metrics.{name}: must be at least 1")
        for name in ("unknown_value", "overflow_value"):
            value = getattr(self, name)
            if not value.strip() or len(value) > self.max_label_length:
                raise ConfigurationError(
                    f"metrics.{name}: must be non-blank and at most max_label_length characters"
                )


class LabelBudget:
    """Caps how many distinct values each label family may take (thread-safe)."""

    def __init__(self, settings: MetricsSettings | None = None) -> None:
        self.settings = settings or MetricsSettings()
        s = self.settings
        self._limits = {
            "queue": s.max_queue_values,
            "type": s.max_type_values,
            "error": s.max_error_values,
            "reason": s.max_reason_values,
            "schedule": s.max_type_values,
        }
        self._seen: dict[str, set[str]] = {family: set() for family in self._limits}
        self._lock = threading.Lock()

    def __call__(self, family: str, raw: object) -> str:
        """The label value to report for ``raw`` in ``family`` (queue, type, error, reason,
        schedule)."""
        s = self.settings
        value = str(raw).strip() if raw is not None else ""
        if not value:
            return s.unknown_value
        value = value[: s.max_label_length]
        with self._lock:
            seen = self._seen[family]
            if value in seen:
                return value
            if len(seen) >= self._limits[family]:
                return s.overflow_value
            seen.add(value)
            return value


class WorkerMetrics:
    """The metrics of one worker process, in a private registry.

    ``attach(worker)`` wires the hooks; ``render()`` returns the exposition text.
    """

    def __init__(
        self, settings: MetricsSettings | None = None, registry: CollectorRegistry | None = None
    ) -> None:
        self.registry = registry or CollectorRegistry(auto_describe=True)
        self.label = LabelBudget(settings)
        r = self.registry
        qt = ("queue", "type")
        self.enqueued = Counter(
            "chokaq_jobs_enqueued", "Jobs accepted (not duplicates).", qt, registry=r
        )
        self.duplicates = Counter(
            "chokaq_jobs_enqueue_duplicates",
            "Enqueues that found an active job with the same idempotency key.",
            qt,
            registry=r,
        )
        self.outcomes = Counter(
            "chokaq_jobs_enqueue_outcomes",
            "Enqueues by what they did: inserted, kept (a duplicate), replaced (a Pending "
            "job's payload, in place) or superseded (a job past Pending, by a new one).",
            (*qt, "outcome"),
            registry=r,
        )
        self.completed = Counter(
            "chokaq_jobs_completed", "Jobs that succeeded (archived).", qt, registry=r
        )
        self.failed = Counter(
            "chokaq_jobs_failed",
            "Executions that did not succeed; outcome is retried or dead_lettered.",
            (*qt, "outcome"),
            registry=r,
        )
        self.retried = Counter(
            "chokaq_jobs_retried", "Retries scheduled after a failed execution.", qt, registry=r
        )
        self.dlq = Counter(
            "chokaq_jobs_dlq",
            "Jobs moved to the DLQ, by failure reason.",
            (*qt, "reason"),
            registry=r,
        )
        self.deferred = Counter(
            "chokaq_jobs_deferred",
            "Jobs deferred because their circuit was open (no attempt used).",
            qt,
            registry=r,
        )
        self.no_handler = Counter(
            "chokaq_jobs_no_handler_released",
            "Jobs released because this worker has no handler for their type (no attempt "
            "used; rejected after unknown_type_grace_seconds).",
            qt,
            registry=r,
        )
        self.requeued = Counter(
            "chokaq_jobs_requeued", "Running jobs put back to pending at shutdown.", qt, registry=r
        )
        self.duration = Histogram(
            "chokaq_job_duration_seconds",
            "Handler run time of finished executions.",
            qt,
            buckets=DURATION_BUCKETS,
            registry=r,
        )
        self.lag = Histogram(
            "chokaq_job_queue_lag_seconds",
            "Seconds from due (scheduled or created) to start, per execution.",
            qt,
            buckets=LAG_BUCKETS,
            registry=r,
        )
        self.batch_size = Histogram(
            "chokaq_batch_size",
            "Jobs per batch handler call (@app.job(batch_size=)), per claimed batch.",
            qt,
            buckets=BATCH_SIZE_BUCKETS,
            registry=r,
        )
        self.heartbeat_failures = Counter(
            "chokaq_heartbeat_failures", "Per-job heartbeat writes that failed.", qt, registry=r
        )
        self.conflicts = Counter(
            "chokaq_state_transition_conflicts",
            "Transitions not applied because the lease was no longer held.",
            (*qt, "transition"),
            registry=r,
        )
        self.circuit_events = Counter(
            "chokaq_circuit_events",
            "Circuit-breaker events per job type.",
            ("type", "state", "event"),
            registry=r,
        )
        self.schedule_runs = Counter(
            "chokaq_schedule_runs",
            "Jobs this process's scheduler enqueued for a schedule's slots.",
            ("schedule",),
            registry=r,
        )
        self.schedule_skipped = Counter(
            "chokaq_schedule_slots_skipped",
            "Slots this process's scheduler did not run: missed (due while nothing enqueued "
            "them; the misfire rule left them out) or overlap (the last run was unfinished).",
            ("schedule", "reason"),
            registry=r,
        )
        self.expired = Counter(
            "chokaq_expired_rescued",
            "Pending jobs past their expiry this process's rescue dead-lettered.",
            registry=r,
        )
        self.zombies = Counter(
            "chokaq_zombies_rescued", "Zombie jobs this process's rescue dead-lettered.", registry=r
        )
        self.steps = Counter(
            "chokaq_steps_recorded",
            "Durable step outcomes this process wrote (ctx.step), done or failed.",
            registry=r,
        )
        self.stream_items = Counter(
            "chokaq_stream_items",
            "Stream item writes this process made for its jobs (ctx.emit; a durable replay's "
            "items already written are not written again, so not counted).",
            registry=r,
        )
        self.storage_seconds = Histogram(
            "chokaq_storage_operation_seconds",
            "Storage operation latency.",
            ("operation",),
            buckets=STORAGE_BUCKETS,
            registry=r,
        )
        self.storage_errors = Counter(
            "chokaq_storage_errors",
            "Storage operations that raised.",
            ("operation", "error"),
            registry=r,
        )
        self._workers: list[Worker[App]] = []
        # The per-job counters' children by raw (queue, type): looking a child up through
        # ``labels()`` and the budget costs more than the count itself, for every job.
        self._per_job: dict[tuple[Any, Any], _PerJob] = {}
        r.register(_ActiveCollector(self))

    # -- wiring -----------------------------------------------------------------------------

    def attach(self, worker: Worker[App]) -> None:
        """Listen to ``worker``'s events, its backend's calls and its App's enqueues."""
        self._workers.append(worker)
        worker.add_listener(self.on_event)
        self.attach_app(worker.app)

    def attach_app(self, app: App) -> None:
        """Count enqueues made through ``app`` and time its storage calls (producers use this)."""
        app.after_enqueue.append(self.on_enqueued)
        app.backend.add_observer(self.on_storage)

    def render(self) -> bytes:
        """The Prometheus text exposition of this registry."""
        return bytes(generate_latest(self.registry))

    # -- hooks ------------------------------------------------------------------------------

    def _qt(self, fields: dict[str, Any]) -> tuple[str, str]:
        return self.label("queue", fields.get("queue")), self.label("type", fields.get("type"))

    def on_event(self, name: str, fields: dict[str, Any]) -> None:
        """A worker listener: ``name`` is the event, ``fields`` its details."""
        handler = _EVENTS.get(name)
        if handler is not None:
            handler(self, fields)

    def on_enqueued(self, jobs: Sequence[NewJob], results: Sequence[EnqueueResult]) -> None:
        for job, result in zip(jobs, results, strict=True):
            labels = (self.label("queue", job.queue), self.label("type", job.type))
            (self.duplicates if result.duplicate else self.enqueued).labels(*labels).inc()
            self.outcomes.labels(*labels, result.outcome).inc()

    def on_storage(self, operation: str, seconds: float, error: BaseException | None) -> None:
        self.storage_seconds.labels(operation).observe(seconds)
        if error is None:
            if operation == "steps_record":
                self.steps.inc()
            elif operation == "streams_emit":
                self.stream_items.inc()
        if error is not None:
            self.storage_errors.labels(operation, self.label("error", type(error).__name__)).inc()

    def _children(self, f: dict[str, Any]) -> _PerJob:
        """The lag, completed and duration children of an event's (queue, type)."""
        key = (f.get("queue"), f.get("type"))
        children = self._per_job.get(key)
        if children is None:
            if len(self._per_job) >= PER_JOB_CACHE:
                self._per_job.clear()  # the budget caps the labels; this caps the raw keys
            qt = self._qt(f)
            children = self._per_job[key] = _PerJob(
                self.lag.labels(*qt), self.completed.labels(*qt), self.duration.labels(*qt)
            )
        return children

    def _steps_recorded(self, f: dict[str, Any]) -> None:
        """A worker's step batch (``steps_record_many``) wrote ``count`` step outcomes."""
        self.steps.inc(int(f.get("count") or 0))

    def _started(self, f: dict[str, Any]) -> None:
        self._children(f).lag.observe(float(f.get("lag") or 0.0))

    def _succeeded(self, f: dict[str, Any]) -> None:
        children = self._children(f)
        children.completed.inc()
        if f.get("duration") is not None:
            children.duration.observe(float(f["duration"]))

    def _failed(self, f: dict[str, Any]) -> None:
        qt = self._qt(f)
        reason = f.get("reason")
        self.failed.labels(*qt, "dead_lettered").inc()
        self.dlq.labels(*qt, self.label("reason", getattr(reason, "name", reason))).inc()
        if f.get("duration") is not None:
            self.duration.labels(*qt).observe(float(f["duration"]))

    def _retried(self, f: dict[str, Any]) -> None:
        qt = self._qt(f)
        self.failed.labels(*qt, "retried").inc()
        self.retried.labels(*qt).inc()

    def _conflict(self, f: dict[str, Any]) -> None:
        self.conflicts.labels(*self._qt(f), self.label("reason", f.get("transition"))).inc()

    def _schedule(self, f: dict[str, Any]) -> None:
        """A fire that wrote records: ``enqueued``, ``missed`` and ``skipped`` slot counts."""
        name = self.label("schedule", f.get("schedule"))
        self.schedule_runs.labels(name).inc(_count(f.get("enqueued")))
        self.schedule_skipped.labels(name, "missed").inc(_count(f.get("missed")))
        self.schedule_skipped.labels(name, "overlap").inc(_count(f.get("skipped")))

    def _circuit(self, f: dict[str, Any]) -> None:
        self.circuit_events.labels(
            self.label("type", f.get("key")),
            self.label("reason", f.get("state")),
            self.label("reason", f.get("event")),
        ).inc()


_EVENTS: dict[str, Callable[[WorkerMetrics, dict[str, Any]], None]] = {
    "started": WorkerMetrics._started,
    "steps_recorded": WorkerMetrics._steps_recorded,
    "succeeded": WorkerMetrics._succeeded,
    "failed": WorkerMetrics._failed,
    "retried": WorkerMetrics._retried,
    "deferred": lambda m, f: m.deferred.labels(*m._qt(f)).inc(),
    "requeued": lambda m, f: m.requeued.labels(*m._qt(f)).inc(),
    "no_handler": lambda m, f: m.no_handler.labels(*m._qt(f)).inc(),
    "heartbeat_failed": lambda m, f: m.heartbeat_failures.labels(*m._qt(f)).inc(),
    "conflict": WorkerMetrics._conflict,
    "circuit": WorkerMetrics._circuit,
    "zombie": lambda m, f: m.zombies.inc(),
    "expired_rescued": lambda m, f: m.expired.inc(),
    "schedule": WorkerMetrics._schedule,
    "batch": lambda m, f: m.batch_size.labels(*m._qt(f)).observe(_count(f.get("size"))),
}


PER_JOB_CACHE = 10_000  # raw (queue, type) keys whose children are kept


@dataclass(frozen=True, slots=True)
class _PerJob:
    """The children of the counters every job touches, for one (queue, type)."""

    lag: Any
    completed: Any
    duration: Any


def _count(value: object) -> int:
    """A count from an event field: a non-negative int (anything else counts 0)."""
    if isinstance(value, bool) or not isinstance(value, int):
        return 0
    return max(0, value)


class _ActiveCollector(Collector):
    """Running jobs per queue and slots per worker, read from the workers at scrape time."""

    def __init__(self, metrics: WorkerMetrics) -> None:
        self.metrics = metrics

    def describe(self) -> Iterable[Metric]:
        return []

    def collect(self) -> Iterable[Metric]:
        active = GaugeMetricFamily(
            "chokaq_workers_active",
            "Jobs running now in this process, per queue.",
            labels=["queue"],
        )
        slots = GaugeMetricFamily("chokaq_worker_concurrency", "Job slots of this process.")
        overrun = GaugeMetricFamily(
            "chokaq_worker_sync_overrun_threads",
            "Threads of sync handlers still running after their job was stopped.",
        )
        running: dict[str, int] = {}
        capacity = 0
        threads = 0
        for worker in self.metrics._workers:
            capacity += worker.concurrency
            threads += worker.threads.overrun
            for ex in list(worker.running.values()):
                queue = self.metrics.label("queue", ex.job.queue)
                running[queue] = running.get(queue, 0) + 1
        for queue, count in sorted(running.items()):
            active.add_metric([queue], count)
        slots.add_metric([], capacity)
        overrun.add_metric([], threads)
        return [active, slots, overrun]


class StoreMetrics:
    """Gauges read from the database at each scrape: per-queue depth, lag and lifetime counters,
    the last minute's throughput, and each schedule's lag and how many schedules are in each
    state. For The Deck (or any process that runs no jobs)."""

    def __init__(self, app: App, settings: MetricsSettings | None = None) -> None:
        self.app = app
        self.label = LabelBudget(settings)
        self.registry = CollectorRegistry(auto_describe=True)
        self.storage_seconds = Histogram(
            "chokaq_storage_operation_seconds",
            "Storage operation latency.",
            ("operation",),
            buckets=STORAGE_BUCKETS,
            registry=self.registry,
        )
        self._observed = False
        self._snapshot: list[Metric] = []
        self.registry.register(_SnapshotCollector(self))

    async def refresh(self) -> None:
        """Read the database and keep the gauges for the next ``render``."""
        await self.app.open()
        backend = self.app.backend
        if not self._observed:
            backend.add_observer(lambda op, s, _e: self.storage_seconds.labels(op).observe(s))
            self._observed = True
        queues = await backend.stats_queues()
        throughput = await backend.stats_throughput()
        now = datetime.now(UTC)
        schedules = await backend.schedules_list(now=now)
        limits = await backend.limits_list(now=now)
        unserved = {u.queue: u.due for u in await backend.queues_unserved(now=now)}
        durable = await backend.durable_counts(now=now)
        families = {
            "pending": GaugeMetricFamily(
                "chokaq_queue_pending", "Pending jobs (due or not).", labels=["queue"]
            ),
            "processing": GaugeMetricFamily(
                "chokaq_queue_processing", "Fetched or processing jobs.", labels=["queue"]
            ),
            "lag": GaugeMetricFamily(
                "chokaq_queue_lag_max_seconds", "Oldest due pending job's wait.", labels=["queue"]
            ),
            "paused": GaugeMetricFamily(
                "chokaq_queue_paused", "1 when the queue is paused.", labels=["queue"]
            ),
            "waiting": GaugeMetricFamily(
                "chokaq_queue_waiting",
                "Jobs waiting on parents (after=), blocked ones included.",
                labels=["queue"],
            ),
            "blocked": GaugeMetricFamily(
                "chokaq_queue_blocked",
                "Jobs waiting on a parent that is in the DLQ.",
                labels=["queue"],
            ),
            "unserved": GaugeMetricFamily(
                "chokaq_queue_due_unserved",
                "Due pending jobs of an active, unpaused queue no live worker serves (counted "
                "up to 1,000; 0 while a worker serves it).",
                labels=["queue"],
            ),
        }
        lifetime = {
            "succeeded": CounterMetricFamily(
                "chokaq_queue_succeeded", "Lifetime successes.", labels=["queue"]
            ),
            "failed": CounterMetricFamily(
                "chokaq_queue_failed", "Lifetime dead-letters.", labels=["queue"]
            ),
            "retried": CounterMetricFamily(
                "chokaq_queue_retried", "Lifetime retries.", labels=["queue"]
            ),
            "replaced": CounterMetricFamily(
                "chokaq_queue_replaced",
                "Lifetime enqueues that replaced a Pending job's payload (on_conflict).",
                labels=["queue"],
            ),
            "superseded": CounterMetricFamily(
                "chokaq_queue_superseded",
                "Lifetime enqueues that superseded a job past Pending (on_conflict).",
                labels=["queue"],
            ),
        }
        for q in queues:
            name = [self.label("queue", q.queue.name)]
            families["pending"].add_metric(name, q.pending)
            families["processing"].add_metric(name, q.fetched + q.processing)
            families["lag"].add_metric(name, q.lag_max_seconds)
            families["paused"].add_metric(name, 1 if q.queue.paused else 0)
            families["waiting"].add_metric(name, q.waiting)
            families["blocked"].add_metric(name, q.blocked)
            families["unserved"].add_metric(name, unserved.get(q.queue.name, 0))
            lifetime["succeeded"].add_metric(name, q.succeeded_total)
            lifetime["failed"].add_metric(name, q.failed_total)
            lifetime["retried"].add_metric(name, q.retried_total)
            lifetime["replaced"].add_metric(name, q.replaced_total)
            lifetime["superseded"].add_metric(name, q.superseded_total)
        rate = GaugeMetricFamily(
            "chokaq_processed_last_minute", "Finished jobs over 60 s.", labels=["outcome"]
        )
        rate.add_metric(["succeeded"], throughput.processed_1m - throughput.failed_1m)
        rate.add_metric(["failed"], throughput.failed_1m)
        self._snapshot = [
            *families.values(),
            *lifetime.values(),
            rate,
            *self._schedules(schedules, now),
            *self._limits(limits),
            *self._durable(durable),
        ]

    def _durable(self, counts: DurableCounts) -> list[Metric]:
        """Suspended durable jobs by queue and what they wait for, and events kept."""
        suspended = GaugeMetricFamily(
            "chokaq_queue_suspended",
            "Suspended durable jobs, by what they wait for (sleep, event, children).",
            labels=["queue", "kind"],
        )
        for queue, kind, count in counts.suspended:
            suspended.add_metric([self.label("queue", queue), kind], count)
        kept = GaugeMetricFamily(
            "chokaq_events_waiting",
            "Events kept for a durable job that has not waited on their key yet.",
        )
        kept.add_metric([], counts.events_kept)
        return [suspended, kept]

    def _limits(self, limits: Sequence[LimitInfo]) -> list[Metric]:
        """Each limited queue and job type (labels ``scope`` and ``name``; partitions are
        never labels: their count is a gauge of its own)."""
        labels = ["scope", "name"]
        families = {
            "rate": GaugeMetricFamily(
                "chokaq_limit_rate_per_second",
                "The rate limit in force, in jobs per second (absent: no rate).",
                labels=labels,
            ),
            "concurrency": GaugeMetricFamily(
                "chokaq_limit_partition_concurrency",
                "The cap on running jobs per partition value (absent: no cap).",
                labels=labels,
            ),
            "started": GaugeMetricFamily(
                "chokaq_limit_started_per_second",
                f"Jobs started per second over the last {RATE_WINDOW_SECONDS:g} s.",
                labels=labels,
            ),
            "pending": GaugeMetricFamily(
                "chokaq_limit_pending", "Due pending jobs under the limit.", labels=labels
            ),
            "held": GaugeMetricFamily(
                "chokaq_limit_held",
                "Due pending jobs the limit holds back now (waiting on the limit).",
                labels=labels,
            ),
            "running": GaugeMetricFamily(
                "chokaq_limit_running", "Fetched or processing jobs.", labels=labels
            ),
            "partitions": GaugeMetricFamily(
                "chokaq_limit_partitions", "Partitions with due pending jobs.", labels=labels
            ),
        }
        for info in limits:
            key = [info.scope, self.label(info.scope, info.name)]
            if info.rate_limit is not None:
                rate = check_rate("rate_limit", info.rate_limit)
                families["rate"].add_metric(key, rate.per_second)
            if info.partition_concurrency is not None:
                families["concurrency"].add_metric(key, info.partition_concurrency)
            families["started"].add_metric(key, info.current_rate)
            families["pending"].add_metric(key, info.pending)
            families["held"].add_metric(key, info.held)
            families["running"].add_metric(key, info.running)
            families["partitions"].add_metric(key, info.partitions)
        return list(families.values())

    def _schedules(self, schedules: Sequence[Schedule], now: datetime) -> list[Metric]:
        lag = GaugeMetricFamily(
            "chokaq_schedule_lag_seconds",
            "Seconds since the next slot of a schedule that should fire came due (0 while it "
            "is ahead); paused and orphaned schedules are left out.",
            labels=["schedule"],
        )
        states = GaugeMetricFamily(
            "chokaq_schedules",
            "Schedules by state: active, paused or orphaned (no running worker declares it; "
            "an orphan counts as orphaned even when paused).",
            labels=["state"],
        )
        counts = {"active": 0, "paused": 0, "orphaned": 0}
        worst: dict[str, float] = {}  # by label: names past the budget share "other" (its max)
        for s in schedules:
            state = "orphaned" if s.orphaned else "paused" if s.paused else "active"
            counts[state] += 1
            if state == "active":
                due = s.next_slot
                behind = (now - due).total_seconds() if due is not None and due <= now else 0.0
                name = self.label("schedule", s.name)
                worst[name] = max(worst.get(name, 0.0), behind)
        for name, behind in worst.items():
            lag.add_metric([name], behind)
        for state, count in counts.items():
            states.add_metric([state], count)
        return [lag, states]

    async def render(self) -> bytes:
        await self.refresh()
        return bytes(generate_latest(self.registry))


class _SnapshotCollector(Collector):
    def __init__(self, owner: StoreMetrics) -> None:
        self.owner = owner

    def describe(self) -> Iterable[Metric]:
        return []

    def collect(self) -> Iterable[Metric]:
        return list(self.owner._snapshot)


def asgi_endpoint(app: App, settings: MetricsSettings | None = None) -> Callable[..., Any]:
    """A Starlette endpoint serving ``StoreMetrics`` of ``app`` (mount it at ``/metrics``)."""
    from starlette.requests import Request
    from starlette.responses import Response

    metrics = StoreMetrics(app, settings)

    async def endpoint(request: Request) -> Response:
        return Response(await metrics.render(), media_type=CONTENT_TYPE)

    return endpoint
