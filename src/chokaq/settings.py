"""Worker settings: one frozen dataclass with every knob, its default and its unit.

Owns defaults and their validation; the worker reads them, nothing else writes them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields

from .errors import ConfigurationError, ValidationError
from .limits import (
    MAX_RETENTION_DAYS,
    MAX_WORKER_SLOTS,
    check_count,
    check_max_attempts,
    check_name,
    check_number,
    check_priority,
    check_seconds,
    check_timeout,
)
from .policies import CircuitPolicy, RetryPolicy, check_retry_policy

__all__ = ["JobDefaults", "WorkerSettings"]

# The durations that must be more than 0 seconds, each at most MAX_DELAY_SECONDS (366 days).
_POSITIVE_SECONDS = (
    "burst_horizon_seconds",
    "heartbeat_min_seconds",
    "heartbeat_max_seconds",
    "fetched_timeout_seconds",
    "zombie_timeout_seconds",
    "rescue_interval_seconds",
    "leadership_lease_seconds",
    "worker_beat_interval_seconds",
    "circuit_delay_seconds",
    "retention_interval_seconds",
    "metrics_second_buckets_seconds",
)
# The highest TCP port (0: any free one).
MAX_PORT = 65_535
# Retention rests at most this many times as long as its last batch took.
MAX_REST_RATIO = 100.0
MIN_SCHEDULE_TICK_SECONDS = 0.05
MAX_SCHEDULE_TICK_SECONDS = 60.0


@dataclass(frozen=True)
class WorkerSettings:
    """How a worker runs. Durations are seconds: finite, more than 0 unless said otherwise, and
    at most 366 days (``MAX_DELAY_SECONDS``; ``default_timeout_seconds`` at most 7 days);
    counts are integers; ``*_days`` at most 3660. A value out of range raises
    ``ConfigurationError`` naming the field and the limit.

    Attributes:
        queues: queues to fetch from. ``None``: the queues the app's handlers and pipes
            declare (``"default"`` when a handler uses it); a list holding ``"*"``: every
            queue, jobs of types this worker has no handler for included.
        concurrency: jobs run at once (changeable at runtime), 1 to 1000.
        prefetch: jobs claimed beyond the free slots, waiting as Fetched (0 = none; at most
            1000).
        burst: stop once nothing is claimable: at once when no eligible job is left, else
            after waiting (``burst_horizon_seconds``) for work that falls due.
        burst_horizon_seconds: in burst mode, how long after the last job it started the
            worker waits for work that falls due (a retry's backoff, a circuit's re-probe, a
            delayed job); a circuit's probe counts as started only when it succeeds. What is
            still left then (retries due later, jobs held by an open circuit, due jobs it cannot
            claim, types it has no handler for) makes it stop with that work left, and
            ``chokaq worker --burst`` exit 75.
        poll_interval_seconds: how often an idle worker looks for work when no notification
            arrives (``None``: 1 s where the backend notifies across processes, 0.05 s where not).
        heartbeat_min_seconds / heartbeat_max_seconds: each running job heartbeats at a
            uniformly random interval in this range.
        heartbeat_failure_threshold: consecutive failed heartbeats before the job is considered
            in trouble; with ``cancel_on_heartbeat_failure`` it is then cancelled.
        default_timeout_seconds: execution timeout when neither job, queue nor handler sets one.
        fetched_timeout_seconds: a Fetched row untouched this long goes back to Pending.
        zombie_timeout_seconds: a Processing row without heartbeat this long is a Zombie
            (per-queue override in the queues table).
        rescue_interval_seconds: how often the elected worker runs rescue.
        leadership_lease_seconds: how long the elected worker's lease on maintenance lasts
            unless renewed, on the database's clock (1 to 3600). A stopped, partitioned or
            blocked leader loses it this long after its last renewal and another worker takes
            over; its later writes are fenced out.
        leadership_renew_seconds: how often the lease is renewed (and how often the other
            workers try to take it); ``None``: a third of the lease. At most half the lease.
        schedule_tick_seconds: how often the elected worker looks for periodic schedules with
            a slot due (a slot is enqueued at most this long after its due time, while a leader
            runs). Every worker marks the schedules its code declares as seen every 10 s.
        shutdown_grace_seconds: how long running jobs may finish after SIGTERM before they are
            cancelled and put back to Pending.
        worker_beat_interval_seconds: how often the worker refreshes its registry row and reads
            operator requests (concurrency, circuit force-close) and queue settings.
        finalize_batch_max: moves per finalize round trip at most; also the durable step
            reads, and the step outcomes, per step-batch statement (capped at 1,000).
        retry: the retry policy (attempts, backoff, max job age) of every job type that has
            none of its own (``@app.job(retry=...)``).
        circuit: the circuit-breaker policy per job type.
        circuit_delay_seconds: how far a job claimed while its circuit is open is deferred.
        unknown_type_grace_seconds: a job of a type this worker has no handler for (and whose
            queue has no pipe) is released, without using an attempt and with a growing delay
            (1 to 60 s), for this long after a worker first found no handler for it, then
            dead-lettered as REJECTED (0: rejected at once).
        fatal_exceptions: exception types that skip retries (in addition to FatalError), for
            every job type, whatever its own ``retry_on`` lists; ``@app.job(fatal_on=...)``
            adds a type's own.
        sync_threads: threads for sync handlers (``None``: concurrency).
        sync_overrun_threads: how many threads of sync handlers that ran past their job's end
            (timed out, cancelled: a thread cannot be interrupted) may run on without holding
            a job slot (``None``: concurrency); each one past that keeps its slot taken until
            its handler returns (event 2032).
        retention_archive_days: archive rows older than this are deleted by the elected worker.
        retention_dlq_days: DLQ rows older than this are deleted by the elected worker.
        retention_interval_seconds: how often the elected worker runs retention.
        retention_rest_ratio: after each batch it deletes, retention rests this many times as
            long as the batch took, so workers keep their throughput (0: flat out; at most 100).
        metrics_port / metrics_host: where the worker serves Prometheus metrics and health
            checks (``None``: not served).
        max_jobs: recycle after this many jobs (``None``: never): the worker starts no more
            than this many, lets them finish (however long they take), then stops with
            ``Worker.recycled`` saying why; ``chokaq worker --max-jobs-per-child`` restarts a
            fresh process in its place.
        max_memory_mib: recycle the same way once the process's resident memory is above this
            many MiB (checked about once a second, from its first job on; ``None``: never).
    """

    queues: tuple[str, ...] | None = None
    concurrency: int = 10
    prefetch: int = 0
    burst: bool = False
    burst_horizon_seconds: float = 60.0
    poll_interval_seconds: float | None = None
    heartbeat_min_seconds: float = 3.0
    heartbeat_max_seconds: float = 5.0
    heartbeat_failure_threshold: int = 10
    cancel_on_heartbeat_failure: bool = False
    default_timeout_seconds: float = 900.0
    fetched_timeout_seconds: float = 120.0
    zombie_timeout_seconds: float = 60.0
    rescue_interval_seconds: float = 15.0
    leadership_lease_seconds: float = 10.0
    leadership_renew_seconds: float | None = None
    schedule_tick_seconds: float = 1.0
    shutdown_grace_seconds: float = 30.0
    worker_beat_interval_seconds: float = 2.0
    finalize_batch_max: int = 500
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    circuit: CircuitPolicy = field(default_factory=CircuitPolicy)
    circuit_delay_seconds: float = 5.0
    unknown_type_grace_seconds: float = 3600.0
    fatal_exceptions: tuple[type[BaseException], ...] = ()
    sync_threads: int | None = None
    sync_overrun_threads: int | None = None
    retention_archive_days: float = 7.0
    retention_dlq_days: float = 30.0
    retention_interval_seconds: float = 300.0
    retention_rest_ratio: float = 4.0
    metrics_second_buckets_seconds: float = 3600.0
    metrics_minute_buckets_days: float = 14.0
    metrics_port: int | None = None
    metrics_host: str = "127.0.0.1"
    max_jobs: int | None = None
    max_memory_mib: int | None = None

    def __post_init__(self) -> None:
        try:  # the shared checks name the field and the limit; a setting's error is this type
            self._check()
        except ValidationError as exc:
            raise ConfigurationError(str(exc)) from None

    def _check(self) -> None:
        if self.queues is not None:
            if isinstance(self.queues, str) or not isinstance(self.queues, tuple | list):
                raise ValidationError("queues", "must be a tuple of queue names, or None")
            for i, queue in enumerate(self.queues):
                if queue != "*":
                    check_name(f"queues[{i}]", queue)
        check_count("concurrency", self.concurrency, maximum=MAX_WORKER_SLOTS)
        check_count("prefetch", self.prefetch, minimum=0, maximum=MAX_WORKER_SLOTS)
        check_count("sync_threads", self.sync_threads, maximum=MAX_WORKER_SLOTS, allow_none=True)
        check_count(
            "sync_overrun_threads",
            self.sync_overrun_threads,
            minimum=0,
            maximum=MAX_WORKER_SLOTS,
            allow_none=True,
        )
        check_count("heartbeat_failure_threshold", self.heartbeat_failure_threshold)
        check_count("finalize_batch_max", self.finalize_batch_max)
        check_count("max_jobs", self.max_jobs, allow_none=True)
        check_count("max_memory_mib", self.max_memory_mib, allow_none=True)
        check_count("metrics_port", self.metrics_port, minimum=0, maximum=MAX_PORT, allow_none=True)
        for name in _POSITIVE_SECONDS:
            check_seconds(name, getattr(self, name), positive=True, allow_none=False)
        check_timeout("default_timeout_seconds", self.default_timeout_seconds)
        check_seconds("poll_interval_seconds", self.poll_interval_seconds, positive=True)
        check_seconds("shutdown_grace_seconds", self.shutdown_grace_seconds, allow_none=False)
        check_seconds(
            "unknown_type_grace_seconds", self.unknown_type_grace_seconds, allow_none=False
        )
        for name in ("retention_archive_days", "retention_dlq_days", "metrics_minute_buckets_days"):
            check_number(
                name,
                getattr(self, name),
                maximum=MAX_RETENTION_DAYS,
                above=True,
                allow_none=False,
                unit="days",
            )
        check_number(
            "retention_rest_ratio",
            self.retention_rest_ratio,
            maximum=MAX_REST_RATIO,
            allow_none=False,
        )
        if self.heartbeat_max_seconds < self.heartbeat_min_seconds:
            raise ConfigurationError(
                "heartbeat_min_seconds / heartbeat_max_seconds: need 0 < min <= max"
            )
        if not 1.0 <= self.leadership_lease_seconds <= 3600.0:
            raise ConfigurationError(
                "leadership_lease_seconds: must be between 1 and 3600 (a shorter lease is "
                "lost to one slow database round trip)"
            )
        renew = self.leadership_renew_seconds
        check_seconds("leadership_renew_seconds", renew, positive=True)
        if renew is not None and renew > self.leadership_lease_seconds / 2:
            raise ConfigurationError(
                "leadership_renew_seconds: must be greater than 0 and at most half of "
                "leadership_lease_seconds (so one late renewal does not lose the lease)"
            )
        check_seconds(
            "schedule_tick_seconds",
            self.schedule_tick_seconds,
            minimum=MIN_SCHEDULE_TICK_SECONDS,
            maximum=MAX_SCHEDULE_TICK_SECONDS,
            allow_none=False,
        )
        if self.zombie_timeout_seconds <= self.heartbeat_max_seconds:
            raise ConfigurationError(
                "zombie_timeout_seconds: must be longer than heartbeat_max_seconds"
            )

    @property
    def leadership_renew_interval(self) -> float:
        """Seconds between lease renewals: the setting, or a third of the lease."""
        renew = self.leadership_renew_seconds
        return self.leadership_lease_seconds / 3 if renew is None else renew

    @classmethod
    def documented(cls) -> list[tuple[str, str, str]]:
        """(name, type, default) of every setting, for the generated configuration reference."""
        out = []
        for f in fields(cls):
            if f.default_factory is not MISSING:
                default = repr(f.default_factory())
            else:
                default = repr(f.default)
            out.append((f.name, str(f.type), default))
        return out


@dataclass(frozen=True)
class JobDefaults:
    """App-wide defaults for every ``@app.job`` type (``App(job_defaults=...)``): what a type
    gets for an option its decorator leaves out.

    Precedence, highest first: the enqueue's option (``handle.options(...)``), the type's
    (``@app.job(...)``), these, then the built-in default: queue ``"default"``, priority 10,
    and the worker's ``WorkerSettings.retry`` (attempts, backoff) and
    ``default_timeout_seconds``. A queue's execution timeout set by an operator (``chokaq
    queue limit --execution-timeout``, The Deck) still comes before the type's and these.
    They are applied when a type is declared, so they must be given to ``App(...)``, before
    its ``@app.job`` declarations; raw jobs (``app.raw``) take the queue and priority too.
    Each value is checked by the rule ``@app.job`` applies to the same option, raising
    ``ValidationError`` naming ``job_defaults.<field>`` and the limit.

    Attributes:
        queue: the queue of a type that names none (None: ``"default"``).
        priority: the priority of a type that names none (None: 10), within +-1,000,000.
        max_attempts: executions, the first included, of a type that sets neither
            ``max_attempts`` nor a ``retry`` policy of its own, whose attempts come first
            (1 to 1000; None: ``retry``'s here, else the worker's).
        retry: the ``RetryPolicy`` of a type that has none of its own (None: the worker's).
        timeout_seconds: the execution timeout of a type that sets none (above 0, at most
            7 days; None: the worker's ``default_timeout_seconds``).
    """

    queue: str | None = None
    priority: int | None = None
    max_attempts: int | None = None
    retry: RetryPolicy | None = None
    timeout_seconds: float | None = None

    def __post_init__(self) -> None:
        if self.queue is not None:
            check_name("job_defaults.queue", self.queue)
        if self.priority is not None:
            check_priority("job_defaults.priority", self.priority)
        check_max_attempts("job_defaults.max_attempts", self.max_attempts)
        check_retry_policy("job_defaults.retry", self.retry)
        check_timeout("job_defaults.timeout_seconds", self.timeout_seconds)

    @classmethod
    def of(cls, value: object) -> JobDefaults:
        """``value`` as ``JobDefaults``: one already, a mapping of its fields, or None (no
        defaults). Anything else, or a key that is no field, raises ``ValidationError`` naming
        it (``job_defaults.colour``)."""
        if value is None:
            return NO_JOB_DEFAULTS
        if isinstance(value, JobDefaults):
            return value
        if not isinstance(value, Mapping):
            raise ValidationError(
                "job_defaults", f"must be a JobDefaults or a mapping, not {type(value).__name__}"
            )
        names = {f.name for f in fields(cls)}
        for key in value:
            if key not in names:
                raise ValidationError(
                    f"job_defaults.{key}",
                    f"is not a job default (one of {', '.join(sorted(names))})",
                )
        return cls(**value)


NO_JOB_DEFAULTS = JobDefaults()
