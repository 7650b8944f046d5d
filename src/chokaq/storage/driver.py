"""The driver contract: what one database must do for the storage seam, with checked arguments.

A driver is a thin adapter: it turns the already checked and normalised arguments of one
operation into its named queries, turns rows into the models of ``chokaq.models``, and says how
its driver errors map onto our tree (``translate``). It checks no argument, observes nothing and
never calls the seam back: ``chokaq.storage.backend.Backend`` does the checking (once, in one
place, the same for every database) and the observing. Times it receives are aware UTC or None
(None: the database's clock on PostgreSQL, the process clock on SQLite). This module also holds
the small seam a worker uses beside storage (``Notifier``) and the settings every driver is
built from. ``Driver``'s methods are grouped by storage area, under the names of the seam's group
modules and of each driver's mixins (docs/architecture.md). It must not import a database
driver.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..errors import ChokaqError
from ..limits import DEFAULT_LIMITS, Limits
from ..models import (
    BatchRequest,
    BatchSize,
    CancelResult,
    Capabilities,
    ClaimedJob,
    DurableCounts,
    EnqueueResult,
    ErrorGroup,
    Heartbeat,
    HeartbeatAck,
    JobAttempt,
    JobBatch,
    JobFilter,
    JobLink,
    JobOutcome,
    JobView,
    LagGroup,
    LeaderTerm,
    Lease,
    LimitInfo,
    Move,
    NewJob,
    PageKey,
    ParentOutcome,
    PendingGroup,
    Pillar,
    Preview,
    QueueInfo,
    QueueStats,
    RequeuedJob,
    RescueResult,
    Schedule,
    ScheduleChange,
    ScheduleDeclaration,
    SeriesPoint,
    SlotRecord,
    Started,
    StepRecord,
    StepWrite,
    StreamItem,
    Summary,
    Supersession,
    Throughput,
    TypeLimit,
    UnservedQueue,
    WaitOutcome,
    WorkerControl,
    WorkerInfo,
    WorkflowMember,
)
from .checks import Edits, QueueLimits
from .graph import Graph

__all__ = ["EXPIRE_BATCH", "Driver", "Notifier", "StorageSettings", "UndecodableRow"]


@dataclass(frozen=True, slots=True)
class UndecodableRow:
    """A row a claim took that cannot be turned into a ``ClaimedJob`` (a value the database
    holds but Python cannot represent, or of the wrong type): its lease, so that the seam can
    bury it as REJECTED, and ``error``, which column and why ("scheduled_at: year 0 is out of
    range"). A driver returns one in place of the job, never raises for it: one bad row must
    not take its batch-mates down."""

    lease: Lease
    error: str


@dataclass(frozen=True, slots=True)
class StorageSettings:
    """How to reach and lay out the store.

    ``schema`` is the PostgreSQL schema, or the table-name prefix on SQLite (``chokaq_jobs_hot``);
    it must match ``^[A-Za-z_][A-Za-z0-9_]{0,39}$``. ``pool_max_size`` bounds PostgreSQL
    connections per process. ``busy_timeout_seconds`` is how long SQLite waits on a locked file.
    ``connect_timeout_seconds`` bounds the first PostgreSQL connection ``open`` makes before it
    starts the pool, so a wrong host, port, database or password fails at once with its cause.
    ``create_missing=False`` makes SQLite refuse to open a file that does not exist (naming it)
    instead of creating it: what read-only commands want.
    """

    url: str
    schema: str = "chokaq"
    limits: Limits = DEFAULT_LIMITS
    pool_min_size: int = 1
    pool_max_size: int = 10
    busy_timeout_seconds: float = 10.0
    cleanup_batch_size: int = 1000
    connect_timeout_seconds: float = 10.0
    create_missing: bool = True


# Expired Pending jobs one rescue pass buries at most (the next pass takes the rest).
EXPIRE_BATCH = 1_000


class Notifier(abc.ABC):
    """How a sleeping worker hears about new work and cancel requests.

    PostgreSQL: LISTEN/NOTIFY on a dedicated connection. SQLite: an in-process broadcast (other
    processes are found by the worker's short poll). ``start`` raises if it cannot listen now;
    the worker then polls, and a notifier that can keep trying (PostgreSQL) does so in the
    background: ``healthy`` turns true once it listens.
    """

    @abc.abstractmethod
    async def start(
        self,
        on_jobs: Callable[[str], None],
        on_cancel: Callable[[str], None],
        on_done: Callable[[str], None] | None = None,
    ) -> None:
        """Begin delivering: ``on_jobs(queue)`` after an enqueue commits, ``on_cancel(job_id)``
        after a cancel request for a running job commits, and ``on_done(job_id)`` after a job
        someone waits on (``App.result``, ``App.stream``) left the hot table or wrote a stream
        item. Callbacks run on the event loop.
        A notifier that cannot tell which queue or job (SQLite's signal file for other
        processes, a listener that was away) passes the empty string: "some queue", "some
        running job", "some waited job"."""

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


class Driver(abc.ABC):
    """One database's adapter. Every method's arguments were checked by the seam: a driver
    trusts them (``Backend`` documents each operation's semantics and limits)."""

    capabilities: Capabilities  # a class attribute; an instance may narrow it (SQLite :memory:)

    def __init__(self, settings: StorageSettings) -> None:
        self.settings = settings

    @abc.abstractmethod
    def translate(self, exc: Exception) -> ChokaqError:
        """Map an error this driver's database library raised onto our tree."""

    # -- lifecycle ----------------------------------------------------------------------------

    @abc.abstractmethod
    async def open(self) -> None: ...

    @abc.abstractmethod
    async def close(self) -> None: ...

    @abc.abstractmethod
    async def migrate(self, via_migrations: bool) -> list[int]: ...

    @abc.abstractmethod
    async def schema_version(self) -> int: ...

    @abc.abstractmethod
    def latest_version(self) -> int: ...

    @abc.abstractmethod
    def notifier(self) -> Notifier: ...

    # -- jobs: enqueue, cancel, edit, advance (jobs.py) ---------------------------------------

    @abc.abstractmethod
    async def jobs_enqueue(
        self,
        jobs: list[NewJob],
        now: datetime | None,
        connection: Any,
        graph: Graph | None = None,
    ) -> list[EnqueueResult]:
        """Insert the jobs; with a ``graph`` (``chokaq.storage.graph``), in one transaction:
        attach the new children to the ``dependents`` of their stored parents (a parent in
        hot or the DLQ, locked until commit; one in the archive has succeeded; one in none of
        them: ``ValidationError``, nothing written), insert each job with its count of parents
        still to succeed (WAITING when above zero) and its children in ``dependents``, and
        insert the edges."""

    @abc.abstractmethod
    async def jobs_cancel(
        self, ids: tuple[str, ...], actor: str, now: datetime | None
    ) -> CancelResult: ...

    @abc.abstractmethod
    async def jobs_edit(self, id: str, actor: str, edits: Edits, now: datetime | None) -> bool: ...

    @abc.abstractmethod
    async def jobs_advance(
        self, seconds: float, queues: list[str] | None, now: datetime | None
    ) -> int:
        """Move earlier by ``seconds`` the due time of Pending rows not due at ``now``."""

    # -- claims: the worker path (claims.py) --------------------------------------------------

    @abc.abstractmethod
    async def jobs_fetch(
        self,
        worker_id: str,
        limit: int,
        queues: list[str] | None,
        exclude_types: list[str],
        start: bool,
        now: datetime | None,
    ) -> list[ClaimedJob | UndecodableRow]:
        """Claim as ``Backend.jobs_fetch`` says; a claimed row that cannot be decoded comes back
        as an ``UndecodableRow`` (still claimed under its lease), in its place."""

    @abc.abstractmethod
    async def jobs_claim_batch(
        self, batch: BatchRequest, now: datetime | None
    ) -> tuple[list[ClaimedJob | UndecodableRow], datetime | None]:
        """Claim one batch as ``Backend.jobs_claim_batch`` says, recording each claimed job
        under ``batch.batch_id``; with nothing claimed, also when the oldest pending job of
        the type may be claimed anyway (None when none is pending)."""

    @abc.abstractmethod
    async def jobs_start(self, leases: list[Lease], now: datetime | None) -> dict[str, Started]:
        """Fetched -> Processing for each lease; the ones that applied, by job id."""

    @abc.abstractmethod
    async def jobs_heartbeat(
        self, beats: list[Heartbeat], now: datetime | None
    ) -> list[HeartbeatAck]: ...

    @abc.abstractmethod
    async def jobs_progress(self, lease: Lease, progress: int, now: datetime | None) -> bool: ...

    @abc.abstractmethod
    async def jobs_release(self, leases: list[Lease], now: datetime | None) -> list[str]: ...

    @abc.abstractmethod
    async def jobs_finalize(self, moves: list[Move], now: datetime | None) -> list[bool]:
        """Apply moves whose job ids are all distinct; whether each applied, in input order.

        The batch is one transaction. A move that cannot apply because another row already
        holds its id in the target pillar reports False and the others still apply; any other
        database error raises and leaves nothing of the batch applied."""

    @abc.abstractmethod
    async def jobs_release_missed(self, fence: LeaderTerm | None) -> int:
        """See ``Backend.jobs_release_missed``."""

    # -- dlq: the dead-letter queue (dlq.py) --------------------------------------------------

    @abc.abstractmethod
    async def dlq_edit(self, id: str, actor: str, edits: Edits) -> bool: ...

    @abc.abstractmethod
    async def dlq_resurrect(
        self, ids: tuple[str, ...], actor: str, edits: Edits, now: datetime | None
    ) -> list[str]: ...

    @abc.abstractmethod
    async def dlq_preview(self, filter: JobFilter, cap: int, sample: int) -> Preview: ...

    @abc.abstractmethod
    async def dlq_resurrect_by_filter(
        self, filter: JobFilter, actor: str, cap: int, now: datetime | None
    ) -> list[str]: ...

    @abc.abstractmethod
    async def dlq_purge(self, ids: tuple[str, ...]) -> list[str]: ...

    @abc.abstractmethod
    async def dlq_purge_by_filter(self, filter: JobFilter, cap: int) -> list[str]: ...

    # -- bulk: actions by filter and run-now (bulk.py) ----------------------------------------

    @abc.abstractmethod
    async def jobs_preview(
        self, pillar: Pillar, filter: JobFilter, cap: int, sample: int
    ) -> Preview:
        """``pillar`` is HOT or ARCHIVE (the DLQ's is ``dlq_preview``)."""

    @abc.abstractmethod
    async def jobs_cancel_by_filter(
        self, filter: JobFilter, actor: str, cap: int, now: datetime | None
    ) -> CancelResult: ...

    @abc.abstractmethod
    async def archive_requeue_by_filter(
        self, filter: JobFilter, actor: str, cap: int, now: datetime | None
    ) -> list[RequeuedJob]: ...

    @abc.abstractmethod
    async def archive_delete_by_filter(self, filter: JobFilter, cap: int) -> list[str]: ...

    @abc.abstractmethod
    async def jobs_run_now(
        self, ids: tuple[str, ...], actor: str, now: datetime | None
    ) -> list[str]: ...

    # -- queues: queues and workers (queues.py) -----------------------------------------------

    @abc.abstractmethod
    async def jobs_wake(self, queues: list[str] | None) -> None:
        """Wake the workers of ``queues`` (None: of every queue) in every process, as new
        work does: the seam calls it after a write that lets pending jobs start (a limit
        changed, a rescue that freed slots, a queue resumed, activated or resized)."""

    @abc.abstractmethod
    async def queue_list(self) -> list[QueueInfo]: ...

    @abc.abstractmethod
    async def queue_get(self, name: str) -> QueueInfo | None: ...

    @abc.abstractmethod
    async def queue_ensure(self, name: str) -> QueueInfo: ...

    @abc.abstractmethod
    async def queue_pause(self, name: str, paused: bool, actor: str | None) -> QueueInfo: ...

    @abc.abstractmethod
    async def queue_activate(self, name: str, active: bool, actor: str | None) -> QueueInfo: ...

    @abc.abstractmethod
    async def queue_hide(self, name: str, hidden: bool, actor: str | None) -> QueueInfo: ...

    @abc.abstractmethod
    async def queue_configure(
        self, name: str, limits: QueueLimits, actor: str | None
    ) -> QueueInfo: ...

    @abc.abstractmethod
    async def worker_beat(self, info: WorkerInfo, now: datetime | None) -> WorkerControl: ...

    @abc.abstractmethod
    async def worker_remove(self, worker_id: str) -> None: ...

    @abc.abstractmethod
    async def workers_list(
        self, alive_within_seconds: float, now: datetime | None
    ) -> list[WorkerInfo]: ...

    @abc.abstractmethod
    async def worker_request(
        self, worker_id: str | None, concurrency: int | None, close_circuit: str | None
    ) -> int: ...

    # -- schedules: periodic schedules (schedules.py) -----------------------------------------

    @abc.abstractmethod
    async def schedules_declare(
        self,
        declarations: list[ScheduleDeclaration],
        next_slots: list[datetime],
        now: datetime,
    ) -> None:
        """Upsert each declaration (``next_slots[i]``: its first slot after ``now``), in one
        transaction. A new row counts its slots from ``now``. An existing row takes the code's
        type, queue, priority, misfire, overlap and ``declared_*``; its timing and kwargs in
        force follow the code only while no operator edit is in force, and a change of timing
        there restarts its slots from ``now``. Any change in force bumps ``revision``; every
        row declared gets ``seen_at = now``."""

    @abc.abstractmethod
    async def schedules_seen(self, names: list[str], now: datetime) -> None:
        """``seen_at = now`` for these schedules (a running worker still declares them)."""

    @abc.abstractmethod
    async def schedules_list(
        self,
        names: list[str] | None,
        due_at: datetime | None,
        seen_since: datetime | None,
    ) -> list[Schedule]:
        """The schedules named (None: all), by name; with ``due_at``, only those not paused
        whose ``next_slot <= due_at`` and, with ``seen_since``, ``seen_at >= seen_since``.
        ``orphaned`` is left False (the seam sets it)."""

    @abc.abstractmethod
    async def schedule_history(self, name: str, limit: int) -> list[SlotRecord]:
        """The newest ``limit`` records of ``name``, newest first."""

    @abc.abstractmethod
    async def schedule_fire(
        self,
        name: str,
        revision: int | None,
        last_slot: datetime | None,
        new_last_slot: datetime | None,
        next_slot: datetime | None,
        jobs: list[NewJob],
        runs: list[SlotRecord],
        records: list[SlotRecord],
        overlap: bool,
        now: datetime,
    ) -> list[SlotRecord] | None:
        """In one transaction: when ``revision`` is given, move the row from (``revision``,
        ``last_slot``) to (``new_last_slot``, ``next_slot``) or, when it is no longer there,
        change nothing and return None. Then enqueue ``jobs`` (ids set; ``runs[i]`` is job i's
        record, ENQUEUED or TRIGGERED), unless ``overlap`` is False and the row's last job is
        still in the hot table: then enqueue none and record each run's slot as SKIPPED, with
        that unfinished job's id. Record
        ``records`` (MISSED) and the runs; the row's ``last_job_id`` and ``last_run_at`` follow
        the newest job enqueued. Keeps the newest 100 records of the schedule. Returns the
        records written, oldest first."""

    @abc.abstractmethod
    async def schedule_update(
        self, name: str, revision: int, change: ScheduleChange, actor: str, now: datetime
    ) -> bool:
        """Apply an operator's ``change`` if the row still has ``revision`` (bumping it);
        ``edited`` sets ``edited_by = actor`` and ``edited_at = now``, else clears both."""

    @abc.abstractmethod
    async def schedule_delete(self, name: str) -> bool:
        """Delete the schedule and its records; False when there was none."""

    # -- ratelimits: rate limits (ratelimits.py) ----------------------------------------------

    @abc.abstractmethod
    async def jobs_fetch_limited(
        self,
        worker_id: str,
        limit: int,
        queues: list[str] | None,
        exclude_types: list[str],
        start: bool,
        now: datetime | None,
    ) -> tuple[list[ClaimedJob | UndecodableRow], datetime | None]:
        """Claim as ``Backend.jobs_claim`` says, in one transaction that holds the limits it
        spends, deciding with ``chokaq.storage.throttle``; also the soonest a rate that held
        jobs back allows another start."""

    @abc.abstractmethod
    async def limits_active(self) -> tuple[list[str], list[str], list[str]]:
        """Queues with a rate in force, types with a limit in force, and the types that have
        partitioned pending jobs."""

    @abc.abstractmethod
    async def limits_declare(self, limits: list[TypeLimit]) -> None:
        """Upsert each type's declared limits; recompute what is in force where no operator
        setting overrides it."""

    @abc.abstractmethod
    async def limit_set(
        self,
        scope: str,
        name: str,
        rate: str | object | None,
        concurrency: int | object | None,
        actor: str | None,
    ) -> LimitInfo:
        """An operator's setting (``UNSET``: leave that one alone); the row is made if
        missing. Returns the row with its load."""

    @abc.abstractmethod
    async def limit_reset(self, scope: str, name: str, actor: str | None) -> LimitInfo:
        """Drop the operator's settings (``NotFoundError`` without a row)."""

    @abc.abstractmethod
    async def limits_list(self, now: datetime | None) -> list[LimitInfo]:
        """Every row that declares or has a limit in force, with its load."""

    # -- workflows: outcomes, relatives and workflows (workflows.py) --------------------------

    @abc.abstractmethod
    async def job_outcome(self, id: str, watch: bool) -> JobOutcome | None:
        """Where the job is (None: in no pillar). ``watch`` first marks a hot job ``waited``,
        under its row lock, so that whichever statement moves it out of hot notifies."""

    @abc.abstractmethod
    async def job_parent_outcomes(self, id: str) -> list[ParentOutcome]:
        """How each of the job's parents ended, in the order of its arguments
        (``pass_results``), then of its edges."""

    @abc.abstractmethod
    async def job_relatives(
        self, id: str, limit: int
    ) -> tuple[str | None, list[JobLink], list[JobLink]]:
        """The job's workflow, its parents and its children (at most ``limit`` each)."""

    @abc.abstractmethod
    async def workflow_members(self, id: str, limit: int) -> list[WorkflowMember]:
        """The jobs of workflow ``id`` (at most ``limit``, by id), with their parents."""

    @abc.abstractmethod
    async def jobs_dependency_fail(
        self, pairs: list[tuple[str, str]], actor: str, why: str, now: datetime | None
    ) -> list[str]:
        """Move each (child, parent) child still WAITING to the DLQ as DEPENDENCY_FAILED,
        naming the parent and ``why``; the ids moved."""

    # -- reads: what the faces list, count and chart (reads.py) -------------------------------

    @abc.abstractmethod
    async def stats_summary(self) -> Summary: ...

    @abc.abstractmethod
    async def stats_queues(self, now: datetime | None) -> list[QueueStats]: ...

    @abc.abstractmethod
    async def jobs_pending_groups(
        self, queues: list[str] | None, marker: str, now: datetime | None
    ) -> list[PendingGroup]:
        """``marker`` is a LIKE pattern (``NO_HANDLER_ERROR%``) for ``no_handler``."""

    @abc.abstractmethod
    async def jobs_lag(self, limit: int, now: datetime | None) -> list[LagGroup]: ...

    @abc.abstractmethod
    async def queues_unserved(
        self, alive_within_seconds: float, cap: int, now: datetime | None
    ) -> list[UnservedQueue]:
        """``cap``: count each queue's due jobs up to ``cap`` and set ``more`` past it."""

    @abc.abstractmethod
    async def stats_throughput(self, now: datetime | None) -> Throughput: ...

    @abc.abstractmethod
    async def stats_series(
        self, since: datetime, until: datetime | None, width_seconds: int, queue: str | None
    ) -> list[SeriesPoint]: ...

    @abc.abstractmethod
    async def dlq_top_errors(self, limit: int, scan: int) -> list[ErrorGroup]: ...

    @abc.abstractmethod
    async def jobs_list(
        self,
        pillar: Pillar,
        filter: JobFilter,
        column: str,
        descending: bool,
        offset: int,
        limit: int,
        key: PageKey | None,
        backward: bool,
    ) -> list[JobView]:
        """Rows in traversal order: ``column`` (whitelisted) then ``id``, both ``descending``
        or not, NULLs in ``column`` last. With ``key``, only rows strictly after it (no
        OFFSET); ``backward`` walks the order from its end (rows strictly before ``key``, or
        the last rows without one), nearest first. Text fields may be cut to a few more
        characters than ``paging.LIST_TEXT_CHARS``; the hot pillar's payload is None."""

    @abc.abstractmethod
    async def jobs_count(
        self, pillar: Pillar, filter: JobFilter, exact_up_to: int
    ) -> tuple[int, bool]:
        """The number of matches and whether it is an estimate: exact up to ``exact_up_to``;
        past it a backend may answer an estimate (True) rather than count every match."""

    @abc.abstractmethod
    async def job_get(self, id: str) -> JobView | None: ...

    @abc.abstractmethod
    async def job_supersession(self, id: str) -> Supersession: ...

    @abc.abstractmethod
    async def job_attempts(self, id: str, limit: int) -> list[JobAttempt]:
        """The job's failed attempts, newest first, at most ``limit``."""

    @abc.abstractmethod
    async def job_batches(self, id: str, limit: int) -> list[JobBatch]:
        """The batches the job ran in, newest first, at most ``limit``."""

    @abc.abstractmethod
    async def batch_sizes(self, type: str, since: datetime, limit: int) -> list[BatchSize]:
        """The type's batches claimed since ``since``, newest first, at most ``limit``."""

    # -- maintenance: rescue, retention, roll-ups, tidying (maintenance.py) -------------------

    @abc.abstractmethod
    async def jobs_rescue(
        self,
        fetched_timeout_seconds: float,
        processing_timeout_seconds: float,
        now: datetime | None,
        reachable_since: datetime | None,
        fence: LeaderTerm | None,
    ) -> RescueResult: ...

    async def jobs_hot_tidy(self, fence: LeaderTerm | None) -> bool:
        """Reclaim dead row versions of the hot table; called only where
        ``capabilities.row_versions`` (a database without them needs nothing here)."""
        return False

    @abc.abstractmethod
    async def archive_purge(
        self, older_than: datetime, batch_size: int, limit: int | None, fence: LeaderTerm | None
    ) -> int:
        """Batches of ``batch_size`` (each its own transaction), ``limit`` in all (None: all)."""

    @abc.abstractmethod
    async def dlq_purge_older(
        self, older_than: datetime, batch_size: int, limit: int | None, fence: LeaderTerm | None
    ) -> int: ...

    @abc.abstractmethod
    async def metrics_prune(
        self, older_than: datetime, width_seconds: int, fence: LeaderTerm | None
    ) -> int: ...

    @abc.abstractmethod
    async def metrics_rollup(self, older_than: datetime, fence: LeaderTerm | None) -> int: ...

    @abc.abstractmethod
    async def limits_tidy(self, older_than: datetime, fence: LeaderTerm | None) -> int:
        """Delete ``limit_state`` rows whose ``tat`` is before ``older_than``."""

    @abc.abstractmethod
    async def unique_keys_tidy(self, older_than: datetime, fence: LeaderTerm | None) -> int:
        """Delete ``unique_keys`` rows whose window ended at or before ``older_than``."""

    @abc.abstractmethod
    async def supersessions_tidy(self, older_than: datetime, fence: LeaderTerm | None) -> int:
        """Delete ``job_supersessions`` rows recorded before ``older_than``."""

    @abc.abstractmethod
    async def batches_tidy(self, older_than: datetime, fence: LeaderTerm | None) -> int:
        """Delete ``job_batches`` rows of batches claimed before ``older_than``."""

    # -- leadership: leases on a role (leadership.py) -----------------------------------------

    @abc.abstractmethod
    async def leadership_claim(
        self, name: str, holder: str, lease_seconds: float, epoch: int | None
    ) -> LeaderTerm | None:
        """Take or renew the role by compare-and-set on the database's clock."""

    @abc.abstractmethod
    async def leadership_release(self, term: LeaderTerm) -> bool: ...

    @abc.abstractmethod
    async def leadership_get(self, name: str) -> LeaderTerm | None: ...

    # -- durable: steps, sleeps, waits, events, spawn, gather (durable.py) --------------------

    @abc.abstractmethod
    async def steps_list(self, job_id: str) -> list[StepRecord]: ...

    @abc.abstractmethod
    async def steps_list_many(self, job_ids: list[str]) -> dict[str, list[StepRecord]]: ...

    @abc.abstractmethod
    async def steps_record_many(
        self, records: list[StepWrite], now: datetime | None
    ) -> list[StepRecord | None]: ...

    @abc.abstractmethod
    async def durable_sleep(
        self, lease: Lease, name: str, seconds: float, now: datetime | None
    ) -> WaitOutcome: ...

    @abc.abstractmethod
    async def durable_wait(
        self,
        lease: Lease,
        name: str,
        key: str,
        timeout_seconds: float | None,
        now: datetime | None,
    ) -> WaitOutcome: ...

    @abc.abstractmethod
    async def events_send(
        self, key: str, data: str, retention_seconds: float, now: datetime | None
    ) -> str | None: ...

    @abc.abstractmethod
    async def durable_wake(self, now: datetime | None, limit: int) -> list[str]: ...

    @abc.abstractmethod
    async def durable_resume(
        self,
        types: list[str],
        attempts: list[int],
        zombie_timeout_seconds: float,
        now: datetime | None,
        reachable_since: datetime | None,
        fence: LeaderTerm | None,
    ) -> list[str]: ...

    @abc.abstractmethod
    async def durable_tidy(self, now: datetime | None, limit: int) -> int: ...

    @abc.abstractmethod
    async def durable_spawn(
        self, lease: Lease, name: str, jobs: list[NewJob], now: datetime | None
    ) -> StepRecord | None: ...

    @abc.abstractmethod
    async def durable_gather(
        self, lease: Lease, name: str, ids: list[str], now: datetime | None
    ) -> WaitOutcome: ...

    @abc.abstractmethod
    async def steps_children(self, ids: list[str]) -> list[str]: ...

    @abc.abstractmethod
    async def durable_counts(self, now: datetime | None) -> DurableCounts: ...

    # -- streams: the items a job emits (streams.py) ------------------------------------------

    @abc.abstractmethod
    async def streams_emit(
        self, lease: Lease, index: int, item: str, now: datetime | None
    ) -> bool: ...

    @abc.abstractmethod
    async def streams_read(self, job_id: str, from_index: int, limit: int) -> list[StreamItem]: ...

    @abc.abstractmethod
    async def streams_length(self, job_id: str) -> int: ...

    @abc.abstractmethod
    async def streams_tidy(self, limit: int) -> int: ...
