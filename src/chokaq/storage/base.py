"""The storage seam: the domain operations every backend implements, with the same semantics.

The worker runtime, the client API, the CLI and The Deck talk to the database only through this
interface; none of them holds SQL. Operations are named entity-first, take keyword-only
arguments and an optional ``now=`` (aware UTC) for tests, and return the frozen dataclasses of
``chokaq.models``. Every public coroutine passes through one instrumentation point
(``Backend._observe``), where timings and errors are recorded and driver errors are translated.

This module must not import a driver.

Semantics shared by all backends (the conformance suite in ``tests/storage`` checks each):

* A transition is atomic (one statement or one short transaction) and reports whether it applied.
  "Not applied" is a value (``False``, ``None``, an id missing from a result), never an exception.
* Lease-guarded transitions match ``id``, ``worker_id`` and ``lease_token`` and the expected status;
  a stale lease changes nothing.
* Succeed and fail moves update ``stats_summary`` (lifetime counters, never decremented by
  anything) and ``metric_buckets`` (1-second buckets) in the same transaction.
* ``now`` defaults to the database's clock (PostgreSQL) or the process clock (SQLite).
* Every argument is validated before anything is written (``chokaq.limits`` for job fields,
  ``chokaq.storage.checks`` for the other operation arguments).
"""

from __future__ import annotations

import abc
import contextlib
import functools
import inspect
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar, TypeVar

from ..errors import ChokaqError, StorageError
from ..limits import DEFAULT_LIMITS, Limits
from ..models import (
    CancelResult,
    Capabilities,
    ClaimedJob,
    EnqueueResult,
    ErrorGroup,
    Heartbeat,
    HeartbeatAck,
    JobFilter,
    JobView,
    Lease,
    Move,
    NewJob,
    Page,
    Pillar,
    Preview,
    QueueInfo,
    QueueStats,
    RescueResult,
    SeriesPoint,
    Started,
    Summary,
    Throughput,
    WorkerControl,
    WorkerInfo,
)

__all__ = [
    "UNSET",
    "Backend",
    "Leadership",
    "Notifier",
    "Observer",
    "StorageSettings",
]

F = TypeVar("F", bound=Callable[..., Awaitable[Any]])


class _Unset:
    """Marks "leave this setting alone" where ``None`` means "clear it"."""

    _instance: ClassVar[_Unset | None] = None

    def __new__(cls) -> _Unset:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


UNSET: Any = _Unset()

# (operation name, seconds taken, the error raised or None)
Observer = Callable[[str, float, BaseException | None], None]


@dataclass(frozen=True, slots=True)
class StorageSettings:
    """How to reach and lay out the store.

    ``schema`` is the PostgreSQL schema, or the table-name prefix on SQLite (``chokaq_jobs_hot``);
    it must match ``^[A-Za-z_][A-Za-z0-9_]{0,39}$``. ``pool_max_size`` bounds PostgreSQL
    connections per process. ``busy_timeout_seconds`` is how long SQLite waits on a locked file.
    """

    url: str
    schema: str = "chokaq"
    limits: Limits = DEFAULT_LIMITS
    pool_min_size: int = 1
    pool_max_size: int = 10
    busy_timeout_seconds: float = 10.0
    cleanup_batch_size: int = 1000


class Notifier(abc.ABC):
    """How a sleeping worker hears about new work and cancel requests.

    PostgreSQL: LISTEN/NOTIFY on a dedicated connection. SQLite: an in-process broadcast (other
    processes are found by the worker's short poll). ``start`` raises if it cannot listen; the
    worker then falls back to polling.
    """

    @abc.abstractmethod
    async def start(
        self,
        on_jobs: Callable[[str], None],
        on_cancel: Callable[[str], None],
    ) -> None:
        """Begin delivering: ``on_jobs(queue)`` after an enqueue commits, ``on_cancel(job_id)``
        after a cancel request for a running job commits. Callbacks run on the event loop. A
        notifier that cannot tell which queue or job (SQLite's signal file for other
        processes) passes the empty string: "some queue", "some running job"."""

    @abc.abstractmethod
    async def stop(self) -> None:
        """Stop delivering and release the connection."""

    @property
    @abc.abstractmethod
    def healthy(self) -> bool:
        """False once the listening connection was lost (the worker polls until restarted)."""

    @property
    def cross_process(self) -> bool:
        """Whether commits made by other processes are heard too (an idle worker may then
        poll slowly); True unless a backend says otherwise."""
        return True


class Leadership(abc.ABC):
    """Who runs maintenance (rescue, retention): one elected process at a time.

    PostgreSQL: a session advisory lock held on a dedicated connection. SQLite: always granted
    (every maintenance statement is guarded, so concurrent runs on one file are harmless).
    """

    @abc.abstractmethod
    async def try_acquire(self) -> bool:
        """Become (or stay) leader; returns whether this process now leads."""

    @abc.abstractmethod
    async def release(self) -> None:
        """Stop leading and release the lock."""


class Backend(abc.ABC):
    """One database's implementation of every storage operation.

    Instances are created by ``chokaq.storage.open_backend(url)`` and must be opened with
    ``await backend.open()`` before use and closed with ``await backend.close()``.
    """

    capabilities: ClassVar[Capabilities]

    def __init__(self, settings: StorageSettings) -> None:
        self.settings = settings
        self._observers: list[Observer] = []

    # -- instrumentation --------------------------------------------------------------------

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Wrap every public coroutine of a concrete backend in the instrumentation point."""
        super().__init_subclass__(**kwargs)
        for name, member in list(vars(cls).items()):
            if name.startswith("_") or not inspect.iscoroutinefunction(member):
                continue
            setattr(cls, name, _instrumented(name, member))

    def add_observer(self, observer: Observer) -> None:
        """Call ``observer(operation, seconds, error)`` after every storage operation."""
        self._observers.append(observer)

    def _observe(self, operation: str, seconds: float, error: BaseException | None) -> None:
        for observer in self._observers:
            with contextlib.suppress(Exception):  # an observer must never break storage
                observer(operation, seconds, error)

    def _translate(self, exc: Exception) -> ChokaqError:
        """Map a driver error to our tree; backends override for their driver's classes."""
        return StorageError(f"{type(exc).__name__}: {exc}")

    # -- lifecycle --------------------------------------------------------------------------

    @abc.abstractmethod
    async def open(self) -> None:
        """Connect (create pools, open files). Does not migrate."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Release every connection; safe to call twice."""

    @abc.abstractmethod
    async def migrate(self, *, via_migrations: bool = False) -> list[int]:
        """Bring the schema up to date under a lock (safe when two processes race); returns the
        versions applied by this call (empty when already current).

        The numbered migrations are the only schema source. An empty database gets all of them
        in one transaction (a fresh install); an existing one gets the pending ones, each in
        its own transaction. ``via_migrations=True`` takes the one-per-transaction path even
        on an empty database (the test that both paths agree uses it)."""

    @abc.abstractmethod
    async def schema_version(self) -> int:
        """The highest applied migration version (0 when the schema does not exist)."""

    @abc.abstractmethod
    def latest_version(self) -> int:
        """The highest migration version this code ships."""

    @abc.abstractmethod
    def notifier(self) -> Notifier:
        """A new notifier for one worker (see ``Notifier``)."""

    @abc.abstractmethod
    def leadership(self, name: str) -> Leadership:
        """A leadership handle for the role ``name`` (e.g. ``"maintenance"``)."""

    # -- enqueue ----------------------------------------------------------------------------

    @abc.abstractmethod
    async def jobs_enqueue(
        self,
        jobs: Sequence[NewJob],
        *,
        now: datetime | None = None,
        connection: Any = None,
    ) -> list[EnqueueResult]:
        """Insert jobs into hot as Pending, in one or a few round trips, in input order.

        Validates every job first (``ValidationError`` naming ``jobs[i].field``; nothing written).
        Creates missing ``queues`` and ``stats_summary`` rows race-safely. A job whose
        idempotency key is held by a hot row gets that row's id with ``duplicate=True`` (also
        when two jobs of the same batch share a key: the first wins). ``connection``, where
        ``capabilities.caller_transactions``, is the caller's open connection: the insert joins
        their transaction and the wake-up is sent only when it commits.
        """

    # -- worker path ------------------------------------------------------------------------

    @abc.abstractmethod
    async def jobs_fetch(
        self,
        *,
        worker_id: str,
        limit: int,
        queues: Sequence[str] | None = None,
        exclude_types: Sequence[str] = (),
        start: bool = False,
        now: datetime | None = None,
    ) -> list[ClaimedJob]:
        """Claim up to ``limit`` eligible jobs for ``worker_id``.

        Eligible: Pending, due (``scheduled_at`` null or <= now), queue not paused and active
        (a queue without a row counts as active), in ``queues`` when given, type not in
        ``exclude_types``, and within the queue's ``max_workers`` (Fetched + Processing across
        all workers, counted inside the fetch). Ordered by priority DESC, then
        coalesce(scheduled_at, created_at), then created_at. Each claim gets a fresh lease token.
        ``start=True`` claims straight into Processing (counting the attempt, setting started_at
        and heartbeat) for a worker that has a free slot for each; otherwise rows become Fetched.
        Concurrent fetchers never receive the same job.
        """

    @abc.abstractmethod
    async def jobs_start(self, *, lease: Lease, now: datetime | None = None) -> Started | None:
        """Fetched -> Processing under the lease: attempt_count + 1, started_at = heartbeat_at =
        now. None when the lease is stale or the row is not Fetched."""

    @abc.abstractmethod
    async def jobs_start_many(
        self, *, leases: Sequence[Lease], now: datetime | None = None
    ) -> dict[str, Started]:
        """``jobs_start`` for many leases in one round trip; returns the ones that applied."""

    @abc.abstractmethod
    async def jobs_heartbeat(
        self, *, beats: Sequence[Heartbeat], now: datetime | None = None
    ) -> list[HeartbeatAck]:
        """Refresh heartbeat_at (and progress when given) of Processing rows under their lease,
        in one round trip. The acks (input order) say whether each job is still owned and
        whether a cancel was requested for it (and by whom)."""

    @abc.abstractmethod
    async def jobs_progress(
        self, *, lease: Lease, progress: int, now: datetime | None = None
    ) -> bool:
        """Store progress (0-100, clamped) of a Processing job under its lease."""

    @abc.abstractmethod
    async def jobs_release(
        self, *, leases: Sequence[Lease], now: datetime | None = None
    ) -> list[str]:
        """Fetched -> Pending under the lease (prefetched but never started; attempts unchanged).
        Returns the ids released."""

    @abc.abstractmethod
    async def jobs_finalize(
        self, *, moves: Sequence[Move], now: datetime | None = None
    ) -> list[bool]:
        """Apply succeed / fail / retry moves, each guarded by its lease (status Fetched or
        Processing), in one round trip where possible; returns whether each applied (input
        order). Each move is atomic with its ``stats_summary`` and ``metric_buckets`` writes:
        if a batch fails as a whole, the backend retries it move by move so that one bad move
        cannot block the others, and a move that fails alone changes nothing.

        * ``SucceedMove``: hot -> archive (finished_at = now, duration), succeeded_total + 1,
          bucket (now, queue, SUCCEEDED, -1) count + 1 with its duration.
        * ``FailMove``: hot -> DLQ (reason, error, failed_at = now, cancelled_by = actor),
          failed_total + 1, bucket (now, queue, FAILED, reason) count + 1.
        * ``RetryMove``: back to Pending due at run_at / now + delay, last_error kept, worker
          and lease cleared, attempt refunded when asked, retried_total + 1 when counted.
        """

    # -- maintenance --------------------------------------------------------------------------

    @abc.abstractmethod
    async def jobs_rescue(
        self,
        *,
        fetched_timeout_seconds: float,
        processing_timeout_seconds: float,
        now: datetime | None = None,
    ) -> RescueResult:
        """Fetched rows not touched for ``fetched_timeout_seconds`` go back to Pending; Processing
        rows whose heartbeat is older than the queue's ``zombie_timeout_seconds`` (or
        ``processing_timeout_seconds``) move to the DLQ as ZOMBIE with counters and buckets."""

    @abc.abstractmethod
    async def archive_purge(
        self, *, older_than: datetime, batch_size: int | None = None, limit: int | None = None
    ) -> int:
        """Delete archive rows finished before ``older_than`` in small batches (each its own
        short transaction), oldest first, at most ``limit`` in all; lifetime counters untouched.
        Returns the number deleted."""

    @abc.abstractmethod
    async def dlq_purge_older(
        self, *, older_than: datetime, batch_size: int | None = None, limit: int | None = None
    ) -> int:
        """Delete DLQ rows failed before ``older_than``, like ``archive_purge``."""

    @abc.abstractmethod
    async def metrics_prune(self, *, older_than: datetime, width_seconds: int = 1) -> int:
        """Delete metric buckets of the given width that started before ``older_than``."""

    async def jobs_hot_tidy(self) -> bool:
        """Reclaim the hot table's dead row versions when they pile up; returns whether it did.

        Every claim, heartbeat and move leaves a dead version behind in ``jobs_hot``; the
        database's own vacuum normally reclaims them, but where it is off or lagging the fetch
        path slows down as they accumulate. The elected worker calls this each maintenance
        pass. The default does nothing (a backend without row versions).
        """
        return False

    @abc.abstractmethod
    async def metrics_rollup(self, *, older_than: datetime) -> int:
        """Fold 1-second buckets older than ``older_than`` into 60-second buckets (summing counts
        and durations, keeping the max) and delete them, in one transaction. Returns the number
        of 1-second buckets folded."""

    # -- operators ----------------------------------------------------------------------------

    @abc.abstractmethod
    async def jobs_cancel(
        self, *, ids: Sequence[str], actor: str, now: datetime | None = None
    ) -> CancelResult:
        """Pending or Fetched -> DLQ CANCELLED at once (cancelled_by = actor, counters and
        buckets as a fail move); Processing -> a durable cancel request (cancel_requested_at,
        cancelled_by) that the owning worker hears through its heartbeat or a notification."""

    @abc.abstractmethod
    async def jobs_edit(
        self,
        *,
        id: str,
        actor: str,
        payload: str | None = None,
        tags: Sequence[str] | None = None,
        priority: int | None = None,
        now: datetime | None = None,
    ) -> bool:
        """Edit a Pending hot job (``None`` leaves a field alone). False unless it is Pending."""

    @abc.abstractmethod
    async def dlq_edit(
        self,
        *,
        id: str,
        actor: str,
        payload: str | None = None,
        tags: Sequence[str] | None = None,
        priority: int | None = None,
        now: datetime | None = None,
    ) -> bool:
        """Edit a DLQ row in place (``None`` leaves a field alone). False when not in the DLQ."""

    @abc.abstractmethod
    async def dlq_resurrect(
        self,
        *,
        ids: Sequence[str],
        actor: str,
        payload: str | None = None,
        tags: Sequence[str] | None = None,
        priority: int | None = None,
        now: datetime | None = None,
    ) -> list[str]:
        """DLQ -> hot Pending (attempts 0, idempotency key cleared, due now, created_at and
        created_by kept, last_modified_by = actor), optionally with a repaired payload, tags or
        priority (applied to every id), in one transaction. Lifetime counters and buckets are
        untouched. Returns the ids moved (an id not in the DLQ is skipped)."""

    @abc.abstractmethod
    async def dlq_preview(self, *, filter: JobFilter, cap: int, sample: int = 10) -> Preview:
        """What a bulk-by-filter action over the DLQ would touch (newest failure first)."""

    @abc.abstractmethod
    async def dlq_resurrect_by_filter(
        self, *, filter: JobFilter, actor: str, cap: int, now: datetime | None = None
    ) -> list[str]:
        """Resurrect at most ``cap`` DLQ rows matching ``filter`` (newest failure first)."""

    @abc.abstractmethod
    async def dlq_purge(self, *, ids: Sequence[str], actor: str) -> list[str]:
        """Delete DLQ rows by id; returns the ids deleted. Counters untouched."""

    @abc.abstractmethod
    async def dlq_purge_by_filter(self, *, filter: JobFilter, actor: str, cap: int) -> list[str]:
        """Delete at most ``cap`` DLQ rows matching ``filter`` (newest failure first)."""

    # -- reads ------------------------------------------------------------------------------

    @abc.abstractmethod
    async def stats_summary(self) -> Summary:
        """Live hot counts plus lifetime counters. Never reads archive or DLQ."""

    @abc.abstractmethod
    async def stats_queues(self, *, now: datetime | None = None) -> list[QueueStats]:
        """Per queue (every row of ``queues``): control plane, hot counts, lifetime counters and
        eligible-pending lag (count, average and max seconds since due)."""

    @abc.abstractmethod
    async def stats_throughput(self, *, now: datetime | None = None) -> Throughput:
        """Processed and failed over the last 60 and 300 seconds, from ``metric_buckets`` only."""

    @abc.abstractmethod
    async def stats_series(
        self,
        *,
        since: datetime,
        until: datetime | None = None,
        width_seconds: int = 1,
        queue: str | None = None,
    ) -> list[SeriesPoint]:
        """Chart points from ``metric_buckets`` of one width, oldest first (empty buckets are
        absent)."""

    @abc.abstractmethod
    async def dlq_top_errors(self, *, limit: int = 5, scan: int = 5000) -> list[ErrorGroup]:
        """The most frequent error families among the newest ``scan`` DLQ rows: grouped by
        reason and the error's first line (whitespace collapsed, at most 160 characters)."""

    @abc.abstractmethod
    async def jobs_page(
        self,
        *,
        pillar: Pillar,
        filter: JobFilter = JobFilter(),  # noqa: B008 (frozen, never mutated)
        sort: str = "date",
        descending: bool = True,
        page: int = 1,
        page_size: int = 100,
    ) -> Page[JobView]:
        """One page of one pillar with the total count. ``sort`` is whitelisted (unknown names
        raise ``ValidationError``); ``page_size`` is 1..1000. Listings carry no payload for the
        hot pillar (payloads are read by ``job_get``)."""

    @abc.abstractmethod
    async def job_get(self, id: str) -> JobView | None:
        """One job looked up in hot, then archive, then DLQ, with every field and its payload."""

    # -- queues -----------------------------------------------------------------------------

    @abc.abstractmethod
    async def queue_list(self) -> list[QueueInfo]:
        """Every queue row, by name."""

    @abc.abstractmethod
    async def queue_ensure(self, name: str) -> QueueInfo:
        """Create the queue row if missing (race-safe) and return it."""

    @abc.abstractmethod
    async def queue_pause(self, *, name: str, paused: bool, actor: str | None = None) -> QueueInfo:
        """Pause or resume a queue (created if missing). Running jobs continue."""

    @abc.abstractmethod
    async def queue_activate(
        self, *, name: str, active: bool, actor: str | None = None
    ) -> QueueInfo:
        """Activate or deactivate (hide) a queue, independently of pause."""

    @abc.abstractmethod
    async def queue_configure(
        self,
        *,
        name: str,
        max_workers: int | None = UNSET,
        zombie_timeout_seconds: float | None = UNSET,
        execution_timeout_seconds: float | None = UNSET,
        actor: str | None = None,
    ) -> QueueInfo:
        """Set a queue's limits (``None`` clears one, ``UNSET`` leaves it alone). max_workers is
        1..10,000; zombie timeout 1..86,400 s; execution timeout 0 < t <= 7 days."""

    # -- workers ----------------------------------------------------------------------------

    @abc.abstractmethod
    async def worker_beat(self, info: WorkerInfo, *, now: datetime | None = None) -> WorkerControl:
        """Register or refresh a worker row (heartbeat_at = now) and return what operators have
        asked of it; close-circuit requests are handed over once and then cleared."""

    @abc.abstractmethod
    async def worker_remove(self, *, worker_id: str) -> None:
        """Delete a worker's row (clean shutdown)."""

    @abc.abstractmethod
    async def workers_list(
        self, *, alive_within_seconds: float = 60.0, now: datetime | None = None
    ) -> list[WorkerInfo]:
        """Workers whose heartbeat is within the window, newest first."""

    @abc.abstractmethod
    async def worker_request(
        self,
        *,
        worker_id: str | None,
        concurrency: int | None = None,
        close_circuit: str | None = None,
    ) -> int:
        """Ask one worker (or every worker, when ``worker_id`` is None) to change concurrency
        (1..1000) or force-close a circuit. Returns the number of workers asked."""


def _instrumented(name: str, method: F) -> F:
    @functools.wraps(method)
    async def wrapper(self: Backend, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            result = await method(self, *args, **kwargs)
        except ChokaqError as exc:
            self._observe(name, time.perf_counter() - started, exc)
            raise
        except Exception as exc:
            translated = self._translate(exc)
            self._observe(name, time.perf_counter() - started, translated)
            raise translated from exc
        self._observe(name, time.perf_counter() - started, None)
        return result

    wrapper.__wrapped_operation__ = name  # type: ignore[attr-defined]
    return wrapper  # type: ignore[return-value]
