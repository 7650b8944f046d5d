"""The storage seam: every domain operation, checked once and observed once, for any database.

The worker runtime, the client API, the CLI and The Deck talk to the database only through
``Backend``; none of them holds SQL. Each operation checks and normalises its arguments with the
rules of ``chokaq.storage.checks`` and ``chokaq.limits`` (the same rules for every database, so
both refuse the same input with the same ``ValidationError``), then calls one method of its
``Driver`` (``chokaq.storage.driver``), and the call is observed exactly once (timings, errors;
driver errors translated into our tree). A driver never calls the seam back, so one public call
is one observation. What a database cannot do is declared in its ``Capabilities`` and refused
here. This module must not import a database driver or hold SQL.

Semantics shared by all backends (the conformance suite in ``tests/storage`` checks each):

* A transition is atomic (one statement or one short transaction) and reports whether it applied.
  "Not applied" is a value (``False``, ``None``, an id missing from a result), never an exception.
* Lease-guarded transitions match ``id``, ``worker_id`` and ``lease_token`` and the expected status;
  a stale lease changes nothing.
* Succeed and fail moves update ``stats_summary`` (lifetime counters, never decremented by
  anything) and ``metric_buckets`` (1-second buckets) in the same transaction.
* ``now`` (aware, any zone; stored in UTC) defaults to the database's clock (PostgreSQL) or the
  process clock (SQLite). Every time lies between 1970-01-01 and 9999-01-01 UTC.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from datetime import datetime
from logging import WARNING
from typing import Any

from ..errors import ChokaqError, NotFoundError, ValidationError
from ..limits import check_actor, check_job_id, check_name, check_time, validate_new_jobs
from ..logs import Event, log_event
from ..models import (
    NO_HANDLER_ERROR,
    CancelResult,
    Capabilities,
    ClaimedJob,
    EnqueueResult,
    ErrorGroup,
    FailMove,
    FailureReason,
    Heartbeat,
    HeartbeatAck,
    JobFilter,
    JobView,
    LeaderTerm,
    Lease,
    Move,
    NewJob,
    Page,
    PendingGroup,
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
from . import checks
from .checks import UNSET
from .driver import Driver, Notifier, StorageSettings, UndecodableRow
from .leadership import DEFAULT_LEASE_SECONDS, Leadership
from .observed import Observer, observed_operations, operation, unobserved
from .schedules import ScheduleOperations

__all__ = ["Backend", "Observer"]

_NO_FILTER = JobFilter()
_EMPTY_CANCEL = CancelResult(cancelled=(), requested=(), not_found=())


class Backend(ScheduleOperations):
    """Every storage operation, for the database its ``driver`` adapts.

    Created by ``chokaq.storage.create_backend(url)``; open it with ``await backend.open()``
    before use and close it with ``await backend.close()``. ``capabilities`` says what this
    database can do; an operation it cannot do raises ``ValidationError`` naming the argument.
    """

    def __init__(self, driver: Driver) -> None:
        self.driver = driver
        self.settings: StorageSettings = driver.settings
        self.capabilities: Capabilities = driver.capabilities
        self._observers: list[Observer] = []
        self._limits = driver.settings.limits
        self._max_batch = driver.settings.limits.max_batch

    # -- instrumentation --------------------------------------------------------------------

    def add_observer(self, observer: Observer) -> None:
        """Call ``observer(operation, seconds, error)`` after every storage operation."""
        self._observers.append(observer)

    def _observe(self, operation: str, seconds: float, error: BaseException | None) -> None:
        for observer in self._observers:
            with contextlib.suppress(Exception):  # an observer must never break storage
                observer(operation, seconds, error)

    @classmethod
    def operations(cls) -> list[str]:
        """The names of every observed storage operation."""
        return observed_operations(cls)

    # -- lifecycle --------------------------------------------------------------------------

    @operation
    async def open(self) -> None:
        """Connect (create pools, open files). Does not migrate."""
        await self.driver.open()

    @operation
    async def close(self) -> None:
        """Release every connection; safe to call twice."""
        await self.driver.close()

    @operation
    async def migrate(self, *, via_migrations: bool = False) -> list[int]:
        """Bring the schema up to date under a lock (safe when two processes race); returns the
        versions applied by this call (empty when already current).

        The numbered migrations are the only schema source. An empty database gets all of them
        in one transaction (a fresh install); an existing one gets the pending ones, each in
        its own transaction. ``via_migrations=True`` takes the one-per-transaction path even
        on an empty database.

        Logs ``MIGRATION_STARTED`` (from and to version) when the schema is behind,
        ``MIGRATION_COMPLETED`` with the versions applied, or ``MIGRATION_FAILED`` with the
        error, for every caller alike (``App.open``, ``chokaq migrate``)."""
        versions = {
            "from_version": await self.driver.schema_version(),
            "to_version": self.driver.latest_version(),
        }
        if versions["from_version"] < versions["to_version"]:
            log_event(Event.MIGRATION_STARTED, "migrating the schema", **versions)
        try:
            applied = await self.driver.migrate(bool(via_migrations))
        except Exception as exc:
            error = exc if isinstance(exc, ChokaqError) else self.driver.translate(exc)
            log_event(
                Event.MIGRATION_FAILED,
                "schema migration failed",
                level=40,
                error_type=type(error).__name__,
                error=str(error),
                **versions,
            )
            if error is exc:
                raise
            raise error from exc
        if applied:
            log_event(Event.MIGRATION_COMPLETED, "schema migrated", versions=applied)
        return applied

    @operation
    async def schema_version(self) -> int:
        """The highest applied migration version (0 when the schema does not exist)."""
        return await self.driver.schema_version()

    def latest_version(self) -> int:
        """The highest migration version this code ships."""
        return self.driver.latest_version()

    def notifier(self) -> Notifier:
        """A new notifier for one worker (see ``Notifier``)."""
        return self.driver.notifier()

    def leadership(
        self, name: str, *, holder: str, lease_seconds: float = DEFAULT_LEASE_SECONDS
    ) -> Leadership:
        """A handle on the role ``name`` (``"maintenance"``; later ``"schedules"``) for
        ``holder`` (a worker id), leased ``lease_seconds`` at a time (see ``Leadership``)."""
        return Leadership(
            self,
            name=check_name("name", name),
            holder=check_name("holder", holder),
            lease_seconds=checks.lease_seconds(lease_seconds),
        )

    # -- enqueue ----------------------------------------------------------------------------

    @operation
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
        caller = checks.caller_connection(connection, self.capabilities)
        checked = validate_new_jobs(jobs, self._limits)
        clock = checks.now(now)
        if not checked:
            return []
        return await self.driver.jobs_enqueue(checked, clock, caller)

    # -- worker path ------------------------------------------------------------------------

    @operation
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
        """Claim up to ``limit`` (0..10,000) eligible jobs for ``worker_id``.

        Eligible: Pending, due (``scheduled_at`` null or <= now), queue not paused and active
        (a queue without a row counts as active), in ``queues`` when given, type not in
        ``exclude_types``, and within the queue's ``max_workers`` (Fetched + Processing across
        all workers, counted inside the fetch). Ordered by priority DESC, then
        coalesce(scheduled_at, created_at), then created_at. Each claim gets a fresh lease token.
        ``start=True`` claims straight into Processing (counting the attempt, setting started_at
        and heartbeat) for a worker that has a free slot for each; otherwise rows become Fetched.
        Concurrent fetchers never receive the same job.
        """
        check_name("worker_id", worker_id)
        limit = checks.bounded_int("limit", limit, 0, checks.MAX_FETCH)
        names = checks.names("queues", queues)
        excluded = checks.names("exclude_types", exclude_types) or []
        clock = checks.now(now)
        if limit == 0 or names == []:
            return []
        rows = await self.driver.jobs_fetch(worker_id, limit, names, excluded, bool(start), clock)
        jobs = [row for row in rows if not isinstance(row, UndecodableRow)]
        if len(jobs) < len(rows):
            await self._reject_undecodable(
                [row for row in rows if isinstance(row, UndecodableRow)], clock
            )
        return jobs

    async def _reject_undecodable(self, rows: list[UndecodableRow], now: datetime | None) -> None:
        """Bury claimed rows that cannot be decoded as REJECTED, under the leases just minted
        (a fail move: counters and buckets as for any failure). If that fails too, the rows
        stay claimed and rescue puts them back, to be rejected by the next claim; the healthy
        jobs of the batch are returned either way."""
        moves: list[Move] = [
            FailMove(
                lease=row.lease,
                reason=FailureReason.REJECTED,
                error=f"Rejected: undecodable row ({row.error})",
            )
            for row in rows
        ]
        moves = checks.moves(moves, len(moves))  # the error text made storable
        for row in rows:
            log_event(
                Event.JOB_ROW_UNDECODABLE,
                "claimed a row that cannot be decoded; rejecting it",
                level=WARNING,
                job_id=row.lease.job_id,
                error=row.error,
            )
        try:
            applied = await self.driver.jobs_finalize(moves, now)
        except Exception as exc:  # the healthy jobs are claimed: hand them out regardless
            stuck, error = rows, str(self.driver.translate(exc))
        else:
            stuck = [row for row, done in zip(rows, applied, strict=True) if not done]
            error = "the move to the DLQ was not applied (is the id there already?)"
        if stuck:
            log_event(
                Event.JOB_ROW_UNDECODABLE,
                "could not reject undecodable rows; they stay claimed for rescue",
                level=WARNING,
                job_ids=",".join(row.lease.job_id for row in stuck),
                error=error,
            )

    @operation
    async def jobs_start(self, *, lease: Lease, now: datetime | None = None) -> Started | None:
        """Fetched -> Processing under the lease: attempt_count + 1, started_at = heartbeat_at =
        now. None when the lease is stale or the row is not Fetched."""
        [checked] = checks.leases("lease", [lease], 1)
        started = await self.driver.jobs_start([checked], checks.now(now))
        return started.get(checked.job_id)

    @operation
    async def jobs_start_many(
        self, *, leases: Sequence[Lease], now: datetime | None = None
    ) -> dict[str, Started]:
        """``jobs_start`` for many leases in one round trip; returns the ones that applied."""
        checked = checks.leases("leases", leases, self._max_batch)
        clock = checks.now(now)
        if not checked:
            return {}
        return await self.driver.jobs_start(checked, clock)

    @operation
    async def jobs_heartbeat(
        self, *, beats: Sequence[Heartbeat], now: datetime | None = None
    ) -> list[HeartbeatAck]:
        """Refresh heartbeat_at (and progress when given, clamped to 0..100) of Processing rows
        under their lease, in one round trip. The acks (input order) say whether each job is
        still owned and whether a cancel was requested for it (and by whom)."""
        checked = checks.heartbeats(beats, self._max_batch)
        clock = checks.now(now)
        if not checked:
            return []
        return await self.driver.jobs_heartbeat(checked, clock)

    @operation
    async def jobs_progress(
        self, *, lease: Lease, progress: float, now: datetime | None = None
    ) -> bool:
        """Store the progress of a Processing job under its lease: a finite number of percent,
        clamped to 0..100 and rounded to a whole one. False when the lease is stale."""
        [checked] = checks.leases("lease", [lease], 1)
        value = checks.progress("progress", progress)
        return await self.driver.jobs_progress(checked, value, checks.now(now))

    @operation
    async def jobs_release(
        self, *, leases: Sequence[Lease], now: datetime | None = None
    ) -> list[str]:
        """Fetched -> Pending under the lease (prefetched but never started; attempts unchanged).
        Returns the ids released, in input order."""
        checked = checks.leases("leases", leases, self._max_batch)
        clock = checks.now(now)
        if not checked:
            return []
        return await self.driver.jobs_release(checked, clock)

    @operation
    async def jobs_finalize(
        self, *, moves: Sequence[Move], now: datetime | None = None
    ) -> list[bool]:
        """Apply succeed / fail / retry moves, each guarded by its lease (status Fetched or
        Processing), in one transaction; returns whether each applied (input order). A job is
        moved at most once per call: a repeated id reports False. A move whose id another row
        already holds in the target pillar reports False and the others still apply; any other
        database error raises ``StorageError`` and applies nothing of the batch.

        * ``SucceedMove``: hot -> archive (finished_at = now, duration), succeeded_total + 1,
          bucket (now, queue, SUCCEEDED, -1) count + 1 with its duration.
        * ``FailMove``: hot -> DLQ (reason, error, failed_at = now, cancelled_by = actor),
          failed_total + 1, bucket (now, queue, FAILED, reason) count + 1.
        * ``RetryMove``: back to Pending due at run_at / now + delay, last_error kept, worker
          and lease cleared, attempt refunded when asked, retried_total + 1 when counted.
        """
        checked = checks.moves(moves, self._max_batch)
        clock = checks.now(now)
        if not checked:
            return []
        first: dict[str, int] = {}
        for i, move in enumerate(checked):
            first.setdefault(move.lease.job_id, i)
        if len(first) == len(checked):
            return await self.driver.jobs_finalize(checked, clock)
        order = sorted(first.values())
        applied = await self.driver.jobs_finalize([checked[i] for i in order], clock)
        done = dict(zip(order, applied, strict=True))
        return [done.get(i, False) for i in range(len(checked))]

    # -- maintenance --------------------------------------------------------------------------

    @operation
    async def jobs_rescue(
        self,
        *,
        fetched_timeout_seconds: float,
        processing_timeout_seconds: float,
        now: datetime | None = None,
        fence: LeaderTerm | None = None,
    ) -> RescueResult:
        """Fetched rows not touched for ``fetched_timeout_seconds`` go back to Pending; Processing
        rows whose heartbeat is older than the queue's ``zombie_timeout_seconds`` (or
        ``processing_timeout_seconds``) move to the DLQ as ZOMBIE with counters and buckets.
        Each timeout is 0 < t <= 366 days.

        ``fence`` (here and on every maintenance write below) is the leadership term the
        caller writes under: the write applies only while that term is current on the
        database's clock, checked in the write's own transaction; otherwise it raises
        ``LeadershipLostError`` and writes nothing. None writes unfenced (an operator's call)."""
        fetched, processing = checks.rescue_timeouts(
            fetched_timeout_seconds, processing_timeout_seconds
        )
        clock = checks.now(now)
        return await self.driver.jobs_rescue(fetched, processing, clock, _fence(fence))

    @operation
    async def jobs_hot_tidy(self, *, fence: LeaderTerm | None = None) -> bool:
        """Reclaim the hot table's dead row versions when they pile up; returns whether it did.

        Every claim, heartbeat and move leaves a dead version behind in ``jobs_hot`` where the
        database keeps row versions (``capabilities.row_versions``); its own vacuum normally
        reclaims them, but where it is off or lagging the fetch path slows down as they
        accumulate. The elected worker calls this each maintenance pass; elsewhere it is False.
        """
        checked = _fence(fence)
        if not self.capabilities.row_versions:
            return False
        return await self.driver.jobs_hot_tidy(checked)

    @operation
    async def archive_purge(
        self,
        *,
        older_than: datetime,
        batch_size: int | None = None,
        limit: int | None = None,
        fence: LeaderTerm | None = None,
    ) -> int:
        """Delete archive rows finished before ``older_than`` in batches of ``batch_size``
        (1..1,000,000; default the cleanup batch size), each its own short transaction, oldest
        first, at most ``limit`` (0..10**9; None: no limit) in all; lifetime counters
        untouched. Returns the number deleted."""
        cutoff = check_time("older_than", older_than)
        size, most = checks.purge_limit(self._batch(batch_size), limit)
        checked = _fence(fence)
        if most == 0:
            return 0
        return await self.driver.archive_purge(cutoff, size, most, checked)

    @operation
    async def dlq_purge_older(
        self,
        *,
        older_than: datetime,
        batch_size: int | None = None,
        limit: int | None = None,
        fence: LeaderTerm | None = None,
    ) -> int:
        """Delete DLQ rows failed before ``older_than``, like ``archive_purge``."""
        cutoff = check_time("older_than", older_than)
        size, most = checks.purge_limit(self._batch(batch_size), limit)
        checked = _fence(fence)
        if most == 0:
            return 0
        return await self.driver.dlq_purge_older(cutoff, size, most, checked)

    def _batch(self, batch_size: int | None) -> object:
        return self.settings.cleanup_batch_size if batch_size is None else batch_size

    @operation
    async def metrics_prune(
        self, *, older_than: datetime, width_seconds: int = 1, fence: LeaderTerm | None = None
    ) -> int:
        """Delete metric buckets of the given width (1..86,400 s) that started before
        ``older_than``."""
        cutoff = check_time("older_than", older_than)
        width = checks.positive_int("width_seconds", width_seconds, checks.MAX_WIDTH_SECONDS)
        return await self.driver.metrics_prune(cutoff, width, _fence(fence))

    @operation
    async def metrics_rollup(self, *, older_than: datetime, fence: LeaderTerm | None = None) -> int:
        """Fold 1-second buckets older than ``older_than`` into 60-second buckets (summing counts
        and durations, keeping the max) and delete them, in one transaction. Returns the number
        of 1-second buckets folded."""
        cutoff = check_time("older_than", older_than)
        return await self.driver.metrics_rollup(cutoff, _fence(fence))

    # -- leadership ---------------------------------------------------------------------------

    @operation
    async def leadership_claim(
        self, *, name: str, holder: str, lease_seconds: float, term: LeaderTerm | None = None
    ) -> LeaderTerm | None:
        """Take the role ``name`` for ``holder``, or renew ``term``, for ``lease_seconds``
        (0 < t <= 1 hour) from now on the database's clock; never the caller's clock.

        Granted (the new term returned) when nobody holds the role, when the current term has
        expired, or when ``term`` is the current, unexpired term of this holder (a renewal: same
        epoch, later ``expires_at``). Taking the role, or re-taking it after one's own term
        lapsed, starts a new term with the epoch one higher. None while another holder's term
        (or this holder's, when ``term`` does not name it) is unexpired."""
        check_name("name", name)
        check_name("holder", holder)
        lease = checks.lease_seconds(lease_seconds)
        epoch = None
        if term is not None:
            checked = checks.term("term", term)
            if (checked.name, checked.holder) != (name, holder):
                raise ValidationError("term", "must be a term of this name and holder")
            epoch = checked.epoch
        return await self.driver.leadership_claim(name, holder, lease, epoch)

    @operation
    async def leadership_release(self, *, term: LeaderTerm) -> bool:
        """End ``term`` now (clean shutdown), so another holder may take the role at once;
        False when it was no longer current. The epoch is kept, so it never repeats."""
        return await self.driver.leadership_release(checks.term("term", term))

    @operation
    async def leadership_get(self, *, name: str) -> LeaderTerm | None:
        """The current, unexpired term of the role ``name``, or None."""
        return await self.driver.leadership_get(check_name("name", name))

    # -- operators ----------------------------------------------------------------------------

    @operation
    async def jobs_cancel(
        self, *, ids: Sequence[str], actor: str, now: datetime | None = None
    ) -> CancelResult:
        """Pending or Fetched -> DLQ CANCELLED at once (cancelled_by = actor, counters and
        buckets as a fail move); Processing -> a durable cancel request (cancel_requested_at,
        cancelled_by) that the owning worker hears through its heartbeat or a notification."""
        unique = checks.job_ids("ids", ids, self._max_batch)
        who = checks.actor(actor)
        clock = checks.now(now)
        if not unique:
            return _EMPTY_CANCEL
        return await self.driver.jobs_cancel(unique, who, clock)

    @operation
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
        check_job_id("id", id)
        who = checks.actor(actor)
        repairs = checks.edits(self._limits, payload, tags, priority)
        return await self.driver.jobs_edit(id, who, repairs, checks.now(now))

    @operation
    async def dlq_edit(
        self,
        *,
        id: str,
        actor: str,
        payload: str | None = None,
        tags: Sequence[str] | None = None,
        priority: int | None = None,
    ) -> bool:
        """Edit a DLQ row in place (``None`` leaves a field alone). False when not in the DLQ."""
        check_job_id("id", id)
        who = checks.actor(actor)
        repairs = checks.edits(self._limits, payload, tags, priority)
        return await self.driver.dlq_edit(id, who, repairs)

    @operation
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
        created_by kept, last_error = the DLQ row's error, last_modified_by = actor), optionally
        with a repaired payload, tags or priority (applied to every id), in one transaction.
        Lifetime counters and buckets are untouched. Returns the ids moved, in input order (an
        id not in the DLQ is skipped)."""
        unique = checks.job_ids("ids", ids, self._max_batch)
        who = checks.actor(actor)
        repairs = checks.edits(self._limits, payload, tags, priority)
        clock = checks.now(now)
        if not unique:
            return []
        return await self.driver.dlq_resurrect(unique, who, repairs, clock)

    def _cap(self, cap: object) -> int:
        return checks.positive_int("cap", cap, self._max_batch)

    @operation
    async def dlq_preview(self, *, filter: JobFilter, cap: int, sample: int = 10) -> Preview:
        """What a bulk-by-filter action over the DLQ would touch (newest failure first): how
        many rows match, how many a ``cap`` (1..max batch) would affect, and the ids of the
        first ``sample`` (0..1000) of them."""
        checked = checks.job_filter(filter)
        most = self._cap(cap)
        size = checks.bounded_int("sample", sample, 0, checks.MAX_SAMPLE)
        return await self.driver.dlq_preview(checked, most, size)

    @operation
    async def dlq_resurrect_by_filter(
        self, *, filter: JobFilter, actor: str, cap: int, now: datetime | None = None
    ) -> list[str]:
        """Resurrect at most ``cap`` DLQ rows matching ``filter`` (newest failure first)."""
        checked = checks.job_filter(filter)
        who = checks.actor(actor)
        most = self._cap(cap)
        return await self.driver.dlq_resurrect_by_filter(checked, who, most, checks.now(now))

    @operation
    async def dlq_purge(self, *, ids: Sequence[str], actor: str) -> list[str]:
        """Delete DLQ rows by id; returns the ids deleted, in input order. Counters untouched."""
        unique = checks.job_ids("ids", ids, self._max_batch)
        checks.actor(actor)
        if not unique:
            return []
        return await self.driver.dlq_purge(unique)

    @operation
    async def dlq_purge_by_filter(self, *, filter: JobFilter, actor: str, cap: int) -> list[str]:
        """Delete at most ``cap`` DLQ rows matching ``filter`` (newest failure first)."""
        checked = checks.job_filter(filter)
        checks.actor(actor)
        return await self.driver.dlq_purge_by_filter(checked, self._cap(cap))

    # -- reads ------------------------------------------------------------------------------

    @operation
    async def stats_summary(self) -> Summary:
        """Live hot counts plus lifetime counters. Never reads archive or DLQ."""
        return await self.driver.stats_summary()

    @operation
    async def jobs_pending_groups(
        self, *, queues: Sequence[str] | None = None, now: datetime | None = None
    ) -> list[PendingGroup]:
        """The Pending jobs of each (queue, type) in ``queues`` (None: every queue), by queue
        then type: due now, waiting to run again, delayed by design, the next due time, and
        how many were released for want of a handler (``PendingGroup``). Queue pause states
        are not applied; a burst worker and The Deck's notices read this."""
        names = checks.names("queues", queues)
        return await self.driver.jobs_pending_groups(names, NO_HANDLER_ERROR + "%", checks.now(now))

    @operation
    async def stats_queues(self, *, now: datetime | None = None) -> list[QueueStats]:
        """Per queue (every row of ``queues``): control plane, hot counts, lifetime counters and
        eligible-pending lag (count, average and max seconds since due)."""
        return await self.driver.stats_queues(checks.now(now))

    @operation
    async def stats_throughput(self, *, now: datetime | None = None) -> Throughput:
        """Processed and failed over the last 60 and 300 seconds, from ``metric_buckets`` only."""
        return await self.driver.stats_throughput(checks.now(now))

    @operation
    async def stats_series(
        self,
        *,
        since: datetime,
        until: datetime | None = None,
        width_seconds: int = 1,
        queue: str | None = None,
    ) -> list[SeriesPoint]:
        """Chart points from ``metric_buckets`` of one width (1..86,400 s), oldest first (empty
        buckets are absent)."""
        start = check_time("since", since)
        end = None if until is None else check_time("until", until)
        width = checks.positive_int("width_seconds", width_seconds, checks.MAX_WIDTH_SECONDS)
        if queue is not None:
            check_name("queue", queue)
        return await self.driver.stats_series(start, end, width, queue)

    @operation
    async def dlq_top_errors(self, *, limit: int = 5, scan: int = 5000) -> list[ErrorGroup]:
        """The ``limit`` (1..1000) most frequent error families among the newest ``scan``
        (1..1,000,000) DLQ rows: grouped by reason and the error's first line (whitespace
        collapsed, at most 160 characters)."""
        most = checks.positive_int("limit", limit, checks.MAX_TOP_ERRORS)
        rows = checks.positive_int("scan", scan, checks.MAX_TOP_ERRORS_SCAN)
        return await self.driver.dlq_top_errors(most, rows)

    @operation
    async def jobs_page(
        self,
        *,
        pillar: Pillar,
        filter: JobFilter = _NO_FILTER,
        sort: str = "date",
        descending: bool = True,
        page: int = 1,
        page_size: int = 100,
    ) -> Page[JobView]:
        """One page of one pillar with the total count. ``sort`` is whitelisted per pillar
        (``checks.SORT_COLUMNS``; others raise ``ValidationError``); rows with no value in the
        sort column (a worker, a duration) come last in either direction; ``page`` is
        1..10,000,000 and ``page_size`` 1..1000. Listings carry no payload for the hot pillar
        (payloads are read by ``job_get``)."""
        which = checks.pillar(pillar)
        column = checks.sort_column(which, sort)
        number = checks.page(page)
        size = checks.page_size(page_size)
        checked = checks.job_filter(filter)
        return await self.driver.jobs_page(which, checked, column, bool(descending), number, size)

    @operation
    async def job_get(self, id: str) -> JobView | None:
        """One job looked up in hot, then archive, then DLQ, with every field and its payload."""
        return await self.driver.job_get(check_job_id("id", id))

    # -- queues -----------------------------------------------------------------------------

    @operation
    async def queue_list(self) -> list[QueueInfo]:
        """Every queue row, by name."""
        return await self.driver.queue_list()

    @operation
    async def queue_get(self, name: str) -> QueueInfo | None:
        """One queue's row, or None when there is none. A queue is *known* once it has a row:
        every enqueue creates its queue's row, and rows are never deleted, so a queue that ever
        held a job is known."""
        return await self.driver.queue_get(check_name("name", name))

    async def _known(self, name: str, create: bool) -> None:
        # Rows are never deleted, so a row seen here still exists when the change is applied;
        # a queue created meanwhile by another caller is simply known by then.
        if not create and await self.driver.queue_get(name) is None:
            raise NotFoundError(
                f"queue {name!r} does not exist (no queue row, and no job has used it); "
                "check the name, or ask to create it (create=True)"
            )

    @operation
    async def queue_ensure(self, name: str) -> QueueInfo:
        """Create the queue row if missing (race-safe) and return it."""
        return await self.driver.queue_ensure(check_name("name", name))

    @operation
    async def queue_pause(
        self, *, name: str, paused: bool, actor: str | None = None, create: bool = True
    ) -> QueueInfo:
        """Pause or resume a queue. Running jobs continue. A missing queue is created, or with
        ``create=False`` refused with ``NotFoundError`` (what operators' tools ask, so that a
        typo is not reported as a success)."""
        check_name("name", name)
        who = check_actor("actor", actor)
        await self._known(name, create)
        return await self.driver.queue_pause(name, bool(paused), who)

    @operation
    async def queue_activate(
        self, *, name: str, active: bool, actor: str | None = None, create: bool = True
    ) -> QueueInfo:
        """Activate or deactivate (hide) a queue, independently of pause; ``create`` as for
        ``queue_pause``."""
        check_name("name", name)
        who = check_actor("actor", actor)
        await self._known(name, create)
        return await self.driver.queue_activate(name, bool(active), who)

    @operation
    async def queue_configure(
        self,
        *,
        name: str,
        max_workers: int | None = UNSET,
        zombie_timeout_seconds: float | None = UNSET,
        execution_timeout_seconds: float | None = UNSET,
        actor: str | None = None,
        create: bool = True,
    ) -> QueueInfo:
        """Set a queue's limits (``None`` clears one, ``UNSET`` leaves it alone). max_workers is
        1..10,000; zombie timeout 15..86,400 s (``checks.MIN_ZOMBIE_TIMEOUT_SECONDS``: three
        default heartbeat intervals); execution timeout 0 < t <= 7 days. ``create`` as for
        ``queue_pause``."""
        check_name("name", name)
        who = check_actor("actor", actor)
        limits = checks.queue_limits(
            max_workers=max_workers,
            zombie_timeout_seconds=zombie_timeout_seconds,
            execution_timeout_seconds=execution_timeout_seconds,
        )
        await self._known(name, create)
        return await self.driver.queue_configure(name, limits, who)

    # -- workers ----------------------------------------------------------------------------

    @operation
    async def worker_beat(self, info: WorkerInfo, *, now: datetime | None = None) -> WorkerControl:
        """Register or refresh a worker row (heartbeat_at = now) and return what operators have
        asked of it; close-circuit requests are handed over once and then cleared."""
        checked = checks.worker_info(info)
        return await self.driver.worker_beat(checked, checks.now(now))

    @operation
    async def worker_remove(self, *, worker_id: str) -> None:
        """Delete a worker's row (clean shutdown)."""
        await self.driver.worker_remove(check_name("worker_id", worker_id))

    @operation
    async def workers_list(
        self, *, alive_within_seconds: float = 60.0, now: datetime | None = None
    ) -> list[WorkerInfo]:
        """Workers whose heartbeat is within the window (0 < t <= 366 days), newest first."""
        window = checks.seconds(
            "alive_within_seconds",
            alive_within_seconds,
            low=0,
            high=checks.MAX_RESCUE_TIMEOUT_SECONDS,
            exclusive=True,
        )
        return await self.driver.workers_list(window, checks.now(now))

    @operation
    async def worker_request(
        self,
        *,
        worker_id: str | None,
        concurrency: int | None = None,
        close_circuit: str | None = None,
    ) -> int:
        """Ask one worker (or every worker, when ``worker_id`` is None) to change concurrency
        (1..1000) or force-close a circuit. Returns the number of workers asked."""
        checks.worker_request(worker_id, concurrency, close_circuit)
        return await self.driver.worker_request(worker_id, concurrency, close_circuit)


def _fence(fence: object) -> LeaderTerm | None:
    return None if fence is None else checks.term("fence", fence)


# Every public coroutine above is an observed operation; a new one without ``@operation``
# would escape the instrumentation point, so say so at import time.
_unobserved = unobserved(Backend)
assert not _unobserved, f"storage operations without @operation: {_unobserved}"
