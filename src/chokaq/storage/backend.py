"""The storage seam: every domain operation, checked once and observed once, for any database.

The worker runtime, the client API, the CLI and The Deck talk to the database only through
``Backend``; none of them holds SQL. Each operation checks and normalises its arguments with the
rules of ``chokaq.storage.checks`` and ``chokaq.limits`` (the same rules for every database, so
both refuse the same input with the same ``ValidationError``), then calls one method of its
``Driver`` (``chokaq.storage.driver``), and the call is observed exactly once (timings, errors;
driver errors translated into our tree). A driver never calls the seam back, so one public call
is one observation. What a database cannot do is declared in its ``Capabilities`` and refused
here. This module must not import a database driver or hold SQL.

``Backend`` is assembled from groups of operations, one module each: this one holds the
lifecycle, enqueue and the worker path (fetch, start, heartbeat, progress, release, finalize);
``upkeep`` rescue, retention, metric roll-ups and leadership; ``operators`` cancel, edit and the
DLQ's actions; ``bulk`` the actions by filter over hot and archive, and run-now; ``views`` the
reads; ``control`` queues and workers; ``schedules`` periodic schedules; ``workflows`` results,
relatives and workflows; ``durable`` the steps, sleeps, waits and events of durable
jobs. Every group follows the rules below.

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
from datetime import UTC, datetime
from logging import WARNING
from typing import Any

from ..errors import ChokaqError
from ..limits import check_name, validate_new_jobs
from ..logs import Event, log_event
from ..models import (
    Capabilities,
    Claim,
    ClaimedJob,
    EnqueueResult,
    FailMove,
    FailureReason,
    Heartbeat,
    HeartbeatAck,
    JobFilter,
    JobStatus,
    Lease,
    Move,
    NewJob,
    Started,
)
from . import checks
from .bulk import BulkOperations
from .control import ControlOperations
from .driver import Driver, Notifier, StorageSettings, UndecodableRow
from .durable import DurableOperations
from .graph import plan
from .group import OperationGroup
from .leadership import DEFAULT_LEASE_SECONDS, Leadership
from .observed import Observer, observed_operations, operation, unobserved
from .operators import OperatorOperations
from .ratelimits import LimitOperations
from .schedules import ScheduleOperations
from .upkeep import UpkeepOperations
from .views import ReadOperations
from .workflows import WorkflowOperations

__all__ = ["Backend", "Observer"]

_NO_FILTER = JobFilter()
# How many times a claim that found only expired jobs claims again before it returns.
EXPIRED_REFILLS = 8


def _utc(when: datetime | None) -> datetime:
    assert when is not None
    return when.astimezone(UTC)


def _expired(jobs: list[ClaimedJob], now: datetime | None) -> list[ClaimedJob]:
    """The jobs claimed past their expiry that had never started (a retry of a job that did
    start runs on: expiry is about the first start). A claim that starts jobs judged expiry on
    the database's clock, and left such a job Processing with no attempt counted; a Fetched
    one is judged here, on ``now`` (None: this process's clock)."""
    if all(job.expires_at is None for job in jobs):
        return []
    moment = now or datetime.now(UTC)
    return [
        job
        for job in jobs
        if job.expires_at is not None
        and job.attempt_count == 0
        and (job.status is JobStatus.PROCESSING or job.expires_at <= moment)
    ]


class Backend(
    UpkeepOperations,
    OperatorOperations,
    BulkOperations,
    ReadOperations,
    ControlOperations,
    ScheduleOperations,
    WorkflowOperations,
    LimitOperations,
    DurableOperations,
    OperationGroup,
):
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

        A job with ``after`` (parent ids: jobs of the same batch, or stored ones) waits until
        every parent has succeeded (see ``chokaq.storage.graph``); the batch is refused
        (``ValidationError`` naming ``jobs[i].after``, nothing written) for a parent that is
        not stored, a cycle, or an idempotency key on a job with or in a dependency.
        """
        caller = checks.caller_connection(connection, self.capabilities)
        clock = checks.now(now)
        checked = validate_new_jobs(jobs, self._limits, clock)
        if not checked:
            return []
        checked, graph = plan(checked)
        return await self.driver.jobs_enqueue(checked, clock, caller, graph)

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
        Concurrent fetchers never receive the same job. Limits apply as ``jobs_claim`` says.
        """
        claim = await self._claim(worker_id, limit, queues, exclude_types, start, now)
        return claim.jobs

    @operation
    async def jobs_claim(
        self,
        *,
        worker_id: str,
        limit: int,
        queues: Sequence[str] | None = None,
        exclude_types: Sequence[str] = (),
        start: bool = False,
        now: datetime | None = None,
    ) -> Claim:
        """``jobs_fetch``, and when the limits that held jobs back allow the next start.

        Limits (``limit_set``, ``@app.job(rate_limit=, partition_concurrency=)``) are enforced
        here, across every process: a job whose queue rate, type rate or partition cap has no
        room now is not claimed (no attempt is spent) and stays Pending. A type's partitioned
        jobs are claimed partition by partition in turn (from the one after the partition the
        last claim served), so one busy partition cannot starve the others; within a partition
        and among unpartitioned jobs, the order is ``jobs_fetch``'s."""
        return await self._claim(worker_id, limit, queues, exclude_types, start, now)

    async def _claim(
        self,
        worker_id: str,
        limit: int,
        queues: Sequence[str] | None,
        exclude_types: Sequence[str],
        start: bool,
        now: datetime | None,
    ) -> Claim:
        check_name("worker_id", worker_id)
        limit = checks.bounded_int("limit", limit, 0, checks.MAX_FETCH)
        names = checks.names("queues", queues)
        excluded = checks.names("exclude_types", exclude_types) or []
        clock = checks.now(now)
        if limit == 0 or names == []:
            return Claim([])
        buried: list[ClaimedJob] = []
        for _ in range(EXPIRED_REFILLS):
            retry_at = None
            if (await self._active_limits()).apply_to(names):
                rows, retry_at = await self.driver.jobs_fetch_limited(
                    worker_id, limit, names, excluded, bool(start), clock
                )
            else:
                rows = await self.driver.jobs_fetch(
                    worker_id, limit, names, excluded, bool(start), clock
                )
                if not rows:  # a limit or a partitioned job may have come since the last read
                    await self._active_limits(fresh=True)
            jobs = [row for row in rows if not isinstance(row, UndecodableRow)]
            if len(jobs) < len(rows):
                await self._reject_undecodable(
                    [row for row in rows if isinstance(row, UndecodableRow)], clock
                )
            expired = _expired(jobs, clock)
            if not expired:
                break
            await self._expire(expired, clock)
            buried += expired
            gone = {job.id for job in expired}
            jobs = [job for job in jobs if job.id not in gone]
            if jobs:
                break
            # Every job claimed had expired: claim again, or the worker would wait for a
            # wake-up with jobs still pending behind them.
        return Claim(jobs, retry_at, tuple(buried))

    async def _expire(self, jobs: list[ClaimedJob], now: datetime | None) -> None:
        """Bury claimed jobs that were not started by their expiry as EXPIRED."""
        moves: list[Move] = [
            FailMove(
                lease=job.lease,
                reason=FailureReason.EXPIRED,
                error=f"Expired: not started by {_utc(job.expires_at):%Y-%m-%d %H:%M:%S} UTC",
            )
            for job in jobs
        ]
        log_event(
            Event.JOB_EXPIRED,
            "claimed jobs past their expiry; dead-lettering them as EXPIRED",
            count=len(jobs),
            job_ids=",".join(job.id for job in jobs[:10]),
        )
        await self._bury_claimed(moves, Event.JOB_EXPIRED, "dead-letter expired jobs", now)

    async def _reject_undecodable(self, rows: list[UndecodableRow], now: datetime | None) -> None:
        """Bury claimed rows that cannot be decoded as REJECTED; the healthy jobs of the batch
        are returned either way."""
        moves: list[Move] = [
            FailMove(
                lease=row.lease,
                reason=FailureReason.REJECTED,
                error=f"Rejected: undecodable row ({row.error})",
            )
            for row in rows
        ]
        for row in rows:
            log_event(
                Event.JOB_ROW_UNDECODABLE,
                "claimed a row that cannot be decoded; rejecting it",
                level=WARNING,
                job_id=row.lease.job_id,
                error=row.error,
            )
        await self._bury_claimed(moves, Event.JOB_ROW_UNDECODABLE, "reject undecodable rows", now)

    async def _bury_claimed(
        self, moves: list[Move], event: Event, what: str, now: datetime | None
    ) -> None:
        """Move claimed rows to the DLQ under the leases their claim just minted (fail moves:
        counters and buckets as for any failure). A move that fails, or is not applied, leaves
        its row claimed: rescue puts it back, and the next claim buries it; this never raises
        (the claim's healthy jobs are handed out regardless)."""
        moves = checks.moves(moves, len(moves))  # the error text made storable
        try:
            applied = await self.driver.jobs_finalize(moves, now)
        except Exception as exc:
            stuck, error = moves, str(self.driver.translate(exc))
        else:
            stuck = [move for move, done in zip(moves, applied, strict=True) if not done]
            error = "the move to the DLQ was not applied (is the id there already?)"
        if stuck:
            log_event(
                event,
                f"could not {what}; they stay claimed for rescue",
                level=WARNING,
                job_ids=",".join(move.lease.job_id for move in stuck),
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


# Every public coroutine above is an observed operation; a new one without ``@operation``
# would escape the instrumentation point, so say so at import time.
_unobserved = unobserved(Backend)
assert not _unobserved, f"storage operations without @operation: {_unobserved}"
