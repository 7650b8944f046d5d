"""The SQLite driver: the adapter class the storage seam calls, for one file on one host.

Owns the hop onto the connection's thread for every operation (``connection.Database.call``),
converting times to the stored Unix seconds, the in-process wake-ups after a commit
(``notify``), translating ``sqlite3`` errors into our tree and declaring what SQLite can do
(``Capabilities``). The work is in ``jobs``, ``bulk``, ``dlq``, ``retention``, ``queues``, ``reads``
and ``leadership``; the statements in ``queries.sql``. It must not check arguments (the seam did)
or hold SQL. It is imported only when the URL is ``sqlite:``.
"""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from datetime import datetime
from typing import Any

from ...errors import ChokaqError, SchemaError, StorageError, StorageUnavailableError
from ...models import (
    CancelResult,
    Capabilities,
    ClaimedJob,
    EnqueueResult,
    ErrorGroup,
    Heartbeat,
    HeartbeatAck,
    JobAttempt,
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
    PendingGroup,
    Pillar,
    Preview,
    QueueInfo,
    QueueStats,
    RescueResult,
    Schedule,
    ScheduleChange,
    ScheduleDeclaration,
    SeriesPoint,
    SlotRecord,
    Started,
    Summary,
    Throughput,
    TypeLimit,
    UnservedQueue,
    WorkerControl,
    WorkerInfo,
    WorkflowMember,
)
from ..checks import UNSET, Edits, QueueLimits
from ..driver import Notifier, StorageSettings, UndecodableRow
from ..graph import Graph
from . import dlq, jobs, leadership, queues, ratelimits, reads, retention, schedules, workflows
from .bulk import SQLiteBulk
from .connection import Database, database_path
from .durable import SQLiteDurable
from .notify import ANY_QUEUE, FileNotifier, broadcast_cancel, broadcast_done, broadcast_jobs
from .rows import from_ts, tags_in, ts_now

__all__ = ["SQLiteDriver"]


class SQLiteDriver(SQLiteDurable, SQLiteBulk):
    """Every storage operation on one SQLite file (WAL mode), safe for several processes."""

    capabilities = Capabilities(
        name="sqlite",
        caller_transactions=False,
        migrates_on_open=True,
        row_versions=False,
    )

    def __init__(self, settings: StorageSettings) -> None:
        super().__init__(settings)
        self._db = Database(
            path=database_path(settings.url),
            prefix=f"{settings.schema}_",
            busy_timeout_seconds=settings.busy_timeout_seconds,
            create_missing=settings.create_missing,
        )
        if self._db.key == ":memory:":
            self.capabilities = replace(type(self).capabilities, in_process=True)

    def translate(self, exc: Exception) -> ChokaqError:
        message = f"{type(exc).__name__}: {exc}"
        if isinstance(exc, sqlite3.OperationalError):
            text = str(exc)
            if "database is locked" in text or "database is busy" in text:
                return StorageUnavailableError(message)
            if "no such table" in text:
                return SchemaError(f"{message} (run `chokaq migrate`)")
            if "unable to open" in text:
                return StorageUnavailableError(message)
        return StorageError(message)

    # -- lifecycle --------------------------------------------------------------------------

    async def open(self) -> None:
        await self._db.open()

    async def close(self) -> None:
        await self._db.close()

    async def migrate(self, via_migrations: bool) -> list[int]:
        return await self._db.call(Database.migrate, via_migrations)

    async def schema_version(self) -> int:
        return await self._db.call(Database.schema_version)

    def latest_version(self) -> int:
        return max((m.version for m in self._db.migrations), default=0)

    def notifier(self) -> Notifier:
        return FileNotifier(self._db.key)

    # -- jobs -------------------------------------------------------------------------------

    async def jobs_enqueue(
        self,
        jobs_: list[NewJob],
        now: datetime | None,
        connection: Any,
        graph: Graph | None = None,
    ) -> list[EnqueueResult]:
        results = await self._db.call(jobs.enqueue, jobs_, ts_now(now), graph)
        broadcast_jobs(self._db.key, [job.queue for job in jobs_])
        return results

    async def jobs_fetch(
        self,
        worker_id: str,
        limit: int,
        queues_: list[str] | None,
        exclude_types: list[str],
        start: bool,
        now: datetime | None,
    ) -> list[ClaimedJob | UndecodableRow]:
        # The clock is read under the write lock (None here): see jobs.fetch.
        return await self._db.call(
            jobs.fetch, worker_id, limit, queues_, exclude_types, start, _given(now)
        )

    async def jobs_fetch_limited(
        self,
        worker_id: str,
        limit: int,
        queues_: list[str] | None,
        exclude_types: list[str],
        start: bool,
        now: datetime | None,
    ) -> tuple[list[ClaimedJob | UndecodableRow], datetime | None]:
        rows, retry_at = await self._db.call(
            ratelimits.fetch_limited, worker_id, limit, queues_, exclude_types, start, _given(now)
        )
        return rows, from_ts(retry_at)

    async def jobs_start(self, leases: list[Lease], now: datetime | None) -> dict[str, Started]:
        return await self._db.call(jobs.start_many, leases, _given(now))

    async def jobs_heartbeat(
        self, beats: list[Heartbeat], now: datetime | None
    ) -> list[HeartbeatAck]:
        return await self._db.call(jobs.heartbeat, beats, ts_now(now))

    async def jobs_progress(self, lease: Lease, progress: int, now: datetime | None) -> bool:
        return await self._db.call(jobs.progress, lease, progress, ts_now(now))

    async def jobs_release(self, leases: list[Lease], now: datetime | None) -> list[str]:
        return await self._db.call(jobs.release, leases, ts_now(now))

    async def jobs_finalize(self, moves: list[Move], now: datetime | None) -> list[bool]:
        applied, moved = await self._db.call(jobs.finalize, moves, ts_now(now))
        self._told(moved)
        return applied

    def _told(self, moved: jobs.Moved) -> None:
        """After a commit: wake the workers of queues that got released children, and tell
        the waiters of jobs that left hot."""
        if moved.woken:
            broadcast_jobs(self._db.key, moved.woken)
        if moved.waited:
            broadcast_done(self._db.key, moved.waited)

    async def jobs_rescue(
        self,
        fetched_timeout_seconds: float,
        processing_timeout_seconds: float,
        now: datetime | None,
        reachable_since: datetime | None,
        fence: LeaderTerm | None,
    ) -> RescueResult:
        since = None if reachable_since is None else reachable_since.timestamp()
        requeued, zombies, expired, moved = await self._db.call(
            jobs.rescue,
            fetched_timeout_seconds,
            processing_timeout_seconds,
            ts_now(now),
            since,
            fence,
        )
        self._told(moved)
        return RescueResult(
            requeued=tuple(requeued), zombies=tuple(zombies), expired=tuple(expired)
        )

    async def jobs_cancel(
        self, ids: tuple[str, ...], actor: str, now: datetime | None
    ) -> CancelResult:
        cancelled, requested, missing, moved = await self._db.call(
            jobs.cancel, ids, actor, ts_now(now)
        )
        self._told(moved)
        if requested:
            broadcast_cancel(self._db.key, requested)
        return CancelResult(tuple(cancelled), tuple(requested), tuple(missing))

    async def jobs_edit(self, id: str, actor: str, edits: Edits, now: datetime | None) -> bool:
        return await self._db.call(jobs.hot_edit, _edit_params(id, actor, edits, now))

    async def jobs_advance(
        self, seconds: float, queues: list[str] | None, now: datetime | None
    ) -> int:
        moved = await self._db.call(jobs.hot_advance, seconds, queues, ts_now(now))
        if moved:
            broadcast_jobs(self._db.key, [ANY_QUEUE])
        return moved

    # -- retention --------------------------------------------------------------------------

    async def archive_purge(
        self, older_than: datetime, batch_size: int, limit: int | None, fence: LeaderTerm | None
    ) -> int:
        cutoff = older_than.timestamp()
        return await self._db.call(
            retention.purge_older, "archive_purge", cutoff, batch_size, limit, fence
        )

    async def dlq_purge_older(
        self, older_than: datetime, batch_size: int, limit: int | None, fence: LeaderTerm | None
    ) -> int:
        cutoff = older_than.timestamp()
        return await self._db.call(
            retention.purge_older, "dlq_purge_older", cutoff, batch_size, limit, fence
        )

    async def metrics_prune(
        self, older_than: datetime, width_seconds: int, fence: LeaderTerm | None
    ) -> int:
        cutoff = older_than.timestamp()
        return await self._db.call(retention.metrics_prune, cutoff, width_seconds, fence)

    async def metrics_rollup(self, older_than: datetime, fence: LeaderTerm | None) -> int:
        cutoff = older_than.timestamp()
        return await self._db.call(retention.metrics_rollup, cutoff, ts_now(None), fence)

    async def limits_tidy(self, older_than: datetime, fence: LeaderTerm | None) -> int:
        return await self._db.call(ratelimits.tidy, older_than.timestamp(), fence)

    async def unique_keys_tidy(self, older_than: datetime, fence: LeaderTerm | None) -> int:
        return await self._db.call(retention.unique_keys_tidy, older_than.timestamp(), fence)

    # -- leadership -------------------------------------------------------------------------

    async def leadership_claim(
        self, name: str, holder: str, lease_seconds: float, epoch: int | None
    ) -> LeaderTerm | None:
        return await self._db.call(leadership.claim, name, holder, lease_seconds, epoch)

    async def leadership_release(self, term: LeaderTerm) -> bool:
        return await self._db.call(leadership.release, term)

    async def leadership_get(self, name: str) -> LeaderTerm | None:
        return await self._db.call(leadership.get, name)

    # -- rate limits ------------------------------------------------------------------------

    async def limits_active(self) -> tuple[list[str], list[str], list[str]]:
        return await self._db.call(ratelimits.active)

    async def limits_declare(self, limits: list[TypeLimit]) -> None:
        await self._db.call(ratelimits.declare, limits, ts_now(None))

    async def limit_set(
        self,
        scope: str,
        name: str,
        rate: str | object | None,
        concurrency: int | object | None,
        actor: str | None,
    ) -> LimitInfo:
        return await self._db.call(
            ratelimits.set_limit, scope, name, rate, concurrency, actor, ts_now(None)
        )

    async def limit_reset(self, scope: str, name: str, actor: str | None) -> LimitInfo:
        return await self._db.call(ratelimits.reset, scope, name, actor, ts_now(None))

    async def jobs_wake(self, queues: list[str] | None) -> None:
        broadcast_jobs(self._db.key, [ANY_QUEUE] if queues is None else queues)

    async def limits_list(self, now: datetime | None) -> list[LimitInfo]:
        return await self._db.call(ratelimits.listed, ts_now(now))

    # -- periodic schedules -----------------------------------------------------------------

    async def schedules_declare(
        self,
        declarations: list[ScheduleDeclaration],
        next_slots: list[datetime],
        now: datetime,
    ) -> None:
        await self._db.call(schedules.declare, declarations, next_slots, now)

    async def schedules_seen(self, names: list[str], now: datetime) -> None:
        await self._db.call(schedules.seen, names, now)

    async def schedules_list(
        self,
        names: list[str] | None,
        due_at: datetime | None,
        seen_since: datetime | None,
    ) -> list[Schedule]:
        return await self._db.call(schedules.listed, names, due_at, seen_since)

    async def schedule_history(self, name: str, limit: int) -> list[SlotRecord]:
        return await self._db.call(schedules.history, name, limit)

    async def schedule_fire(
        self,
        name: str,
        revision: int | None,
        last_slot: datetime | None,
        new_last_slot: datetime | None,
        next_slot: datetime | None,
        jobs_: list[NewJob],
        runs: list[SlotRecord],
        records: list[SlotRecord],
        overlap: bool,
        now: datetime,
    ) -> list[SlotRecord] | None:
        written = await self._db.call(
            schedules.fire,
            name,
            revision,
            last_slot,
            new_last_slot,
            next_slot,
            jobs_,
            runs,
            records,
            overlap,
            now,
        )
        if written is not None and any(r.job_id is not None for r in written):
            broadcast_jobs(self._db.key, [job.queue for job in jobs_])
        return written

    async def schedule_update(
        self, name: str, revision: int, change: ScheduleChange, actor: str, now: datetime
    ) -> bool:
        return await self._db.call(schedules.update, name, revision, change, actor, now)

    async def schedule_delete(self, name: str) -> bool:
        return await self._db.call(schedules.delete, name)

    # -- the dead-letter queue --------------------------------------------------------------

    async def dlq_edit(self, id: str, actor: str, edits: Edits) -> bool:
        return await self._db.call(dlq.dlq_edit, _edit_params(id, actor, edits, None))

    async def dlq_resurrect(
        self, ids: tuple[str, ...], actor: str, edits: Edits, now: datetime | None
    ) -> list[str]:
        params = _edit_params("", actor, edits, now)
        moved, queue_names = await self._db.call(dlq.resurrect, ids, params)
        broadcast_jobs(self._db.key, queue_names)
        return moved

    async def dlq_preview(self, filter: JobFilter, cap: int, sample: int) -> Preview:
        def run(db: Database) -> tuple[int, list[str]]:
            return db.read(dlq.dlq_filter_ids, db, filter, min(cap, sample))

        matched, ids = await self._db.call(run)
        return Preview(
            matched=matched, will_affect=min(matched, cap), cap=cap, sample_ids=tuple(ids)
        )

    async def dlq_resurrect_by_filter(
        self, filter: JobFilter, actor: str, cap: int, now: datetime | None
    ) -> list[str]:
        params = _edit_params("", actor, Edits(), now)
        moved, queue_names = await self._db.call(dlq.resurrect_by_filter, filter, cap, params)
        broadcast_jobs(self._db.key, queue_names)
        return moved

    async def dlq_purge(self, ids: tuple[str, ...]) -> list[str]:
        purged, moved = await self._db.call(dlq.dlq_purge, ids, ts_now(None))
        self._told(moved)
        return purged

    async def dlq_purge_by_filter(self, filter: JobFilter, cap: int) -> list[str]:
        purged, moved = await self._db.call(dlq.dlq_purge_by_filter, filter, cap, ts_now(None))
        self._told(moved)
        return purged

    # -- results and workflows --------------------------------------------------------------

    async def jobs_release_missed(self, fence: LeaderTerm | None) -> int:
        # The write lock serializes an enqueue and the move of its parent: a move sees every
        # child, so it never leaves a release for later.
        return 0

    async def job_outcome(self, id: str, watch: bool) -> JobOutcome | None:
        return await self._db.call(workflows.job_outcome, id, watch)

    async def job_parent_results(self, id: str) -> list[tuple[str, str | None, str | None]]:
        return await self._db.call(workflows.job_parent_results, id)

    async def job_relatives(
        self, id: str, limit: int
    ) -> tuple[str | None, list[JobLink], list[JobLink]]:
        return await self._db.call(workflows.job_relatives, id, limit)

    async def workflow_members(self, id: str, limit: int) -> list[WorkflowMember]:
        return await self._db.call(workflows.workflow_members, id, limit)

    async def jobs_dependency_fail(
        self, pairs: list[tuple[str, str]], actor: str, why: str, now: datetime | None
    ) -> list[str]:
        def run(db: Database) -> tuple[list[str], jobs.Moved]:
            return db.write(
                jobs.dependency_fail,
                db,
                pairs,
                lambda parent: f"Dependency failed: parent {parent} is in the DLQ; {why}",
                actor,
                ts_now(now),
            )

        failed, moved = await self._db.call(run)
        self._told(moved)
        return failed

    # -- reads ------------------------------------------------------------------------------

    async def stats_summary(self) -> Summary:
        return await self._db.call(reads.stats_summary)

    async def jobs_pending_groups(
        self, queues: list[str] | None, marker: str, now: datetime | None
    ) -> list[PendingGroup]:
        return await self._db.call(reads.jobs_pending_groups, queues, marker, ts_now(now))

    async def jobs_lag(self, limit: int, now: datetime | None) -> list[LagGroup]:
        return await self._db.call(reads.jobs_lag, limit, ts_now(now))

    async def queues_unserved(
        self, alive_within_seconds: float, cap: int, now: datetime | None
    ) -> list[UnservedQueue]:
        at = ts_now(now)
        return await self._db.call(reads.queues_unserved, at - alive_within_seconds, cap, at)

    async def stats_queues(self, now: datetime | None) -> list[QueueStats]:
        return await self._db.call(reads.stats_queues, ts_now(now))

    async def stats_throughput(self, now: datetime | None) -> Throughput:
        return await self._db.call(reads.stats_throughput, ts_now(now))

    async def stats_series(
        self, since: datetime, until: datetime | None, width_seconds: int, queue: str | None
    ) -> list[SeriesPoint]:
        end = None if until is None else until.timestamp()
        return await self._db.call(reads.stats_series, since.timestamp(), end, width_seconds, queue)

    async def dlq_top_errors(self, limit: int, scan: int) -> list[ErrorGroup]:
        return await self._db.call(reads.top_errors, limit, scan)

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
        return await self._db.call(
            reads.jobs_list, pillar, filter, column, descending, offset, limit, key, backward
        )

    async def jobs_count(
        self, pillar: Pillar, filter: JobFilter, exact_up_to: int
    ) -> tuple[int, bool]:
        return await self._db.call(reads.jobs_count, pillar, filter, exact_up_to)

    async def job_get(self, id: str) -> JobView | None:
        return await self._db.call(reads.job_get, id)

    async def job_attempts(self, id: str, limit: int) -> list[JobAttempt]:
        return await self._db.call(reads.job_attempts, id, limit)

    # -- queues and workers -----------------------------------------------------------------

    async def queue_list(self) -> list[QueueInfo]:
        return await self._db.call(queues.queue_list)

    async def queue_get(self, name: str) -> QueueInfo | None:
        return await self._db.call(queues.queue_get, name)

    async def queue_ensure(self, name: str) -> QueueInfo:
        return await self._db.call(queues.queue_ensure, name, ts_now(None))

    async def queue_pause(self, name: str, paused: bool, actor: str | None) -> QueueInfo:
        return await self._db.call(
            queues.queue_set, "queue_pause", name, paused, actor, ts_now(None)
        )

    async def queue_hide(self, name: str, hidden: bool, actor: str | None) -> QueueInfo:
        return await self._db.call(
            queues.queue_set, "queue_hide", name, hidden, actor, ts_now(None)
        )

    async def queue_activate(self, name: str, active: bool, actor: str | None) -> QueueInfo:
        return await self._db.call(
            queues.queue_set, "queue_activate", name, active, actor, ts_now(None)
        )

    async def queue_configure(self, name: str, limits: QueueLimits, actor: str | None) -> QueueInfo:
        values = {
            "max_workers": limits.max_workers,
            "zombie": limits.zombie_timeout_seconds,
            "execution": limits.execution_timeout_seconds,
        }
        params: dict[str, object] = {"name": name, "actor": actor, "now": ts_now(None)}
        for key, value in values.items():
            params[f"set_{key}"] = int(value is not UNSET)
            params[key] = None if value is UNSET else value
        return await self._db.call(queues.queue_configure, params)

    async def worker_beat(self, info: WorkerInfo, now: datetime | None) -> WorkerControl:
        return await self._db.call(queues.worker_beat, info, ts_now(now))

    async def worker_remove(self, worker_id: str) -> None:
        await self._db.call(queues.worker_remove, worker_id)

    async def workers_list(
        self, alive_within_seconds: float, now: datetime | None
    ) -> list[WorkerInfo]:
        return await self._db.call(queues.workers_list, ts_now(now) - alive_within_seconds)

    async def worker_request(
        self, worker_id: str | None, concurrency: int | None, close_circuit: str | None
    ) -> int:
        return await self._db.call(queues.worker_request, worker_id, concurrency, close_circuit)


def _edit_params(id: str, actor: str, edits: Edits, now: datetime | None) -> dict[str, object]:
    return jobs.edit_params(
        id=id,
        actor=actor,
        payload=edits.payload,
        tags=tags_in(edits.tags),
        set_tags=edits.tags is not None,
        priority=edits.priority,
        now=ts_now(now),
    )


def _given(now: datetime | None) -> float | None:
    """An injected clock as Unix seconds; None when the statement is to read the clock itself
    (under the write lock: a claim's start is then never earlier than the moment it could see
    the slot it took free, though it waited for the lock)."""
    return None if now is None else now.timestamp()
