"""The SQLite backend: the ``Backend`` interface over one file, for one host.

Owns the hop onto the connection's thread for every operation and the argument checks only SQLite
makes (the rules both backends share are in ``chokaq.storage.checks``); the statements live in
``queries.sql`` and the work in ``transitions`` (worker path), ``operators``
(operator and retention actions), ``control`` (queues and workers) and ``reads``. Wake-ups are an
in-process broadcast (``notify``). It must not be imported unless the URL is ``sqlite:``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ...errors import (
    ChokaqError,
    SchemaError,
    StorageError,
    StorageUnavailableError,
    ValidationError,
)
from ...limits import MAX_NAME_LENGTH, check_actor, check_job_id, check_name, validate_new_jobs
from ...models import (
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
from .. import checks
from ..base import UNSET, Backend, Leadership, Notifier, StorageSettings
from . import control, operators, reads, transitions
from .connection import Database, database_path
from .notify import FileLeadership, FileNotifier, broadcast_cancel, broadcast_jobs
from .rows import tags_in, to_ts, ts_now

__all__ = ["SQLiteBackend"]


class SQLiteBackend(Backend):
    """Every storage operation on one SQLite file (WAL mode), safe for several processes."""

    capabilities = Capabilities(
        name="sqlite",
        listen_notify=False,
        skip_locked=False,
        advisory_locks=False,
        caller_transactions=False,
        multi_host=False,
        compression=None,
    )

    def __init__(self, settings: StorageSettings) -> None:
        super().__init__(settings)
        self._db = Database(
            path=database_path(settings.url),
            prefix=f"{settings.schema}_",
            busy_timeout_seconds=settings.busy_timeout_seconds,
        )

    def _translate(self, exc: Exception) -> ChokaqError:
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

    async def migrate(self, *, via_migrations: bool = False) -> list[int]:
        return await self._db.call(Database.migrate, via_migrations)

    async def schema_version(self) -> int:
        return await self._db.call(Database.schema_version)

    def latest_version(self) -> int:
        return max((m.version for m in self._db.migrations), default=0)

    def notifier(self) -> Notifier:
        return FileNotifier(self._db.key)

    def leadership(self, name: str) -> Leadership:
        return FileLeadership(name)

    # -- enqueue ----------------------------------------------------------------------------

    async def jobs_enqueue(
        self,
        jobs: Sequence[NewJob],
        *,
        now: datetime | None = None,
        connection: Any = None,
    ) -> list[EnqueueResult]:
        if connection is not None:
            raise ValidationError(
                "connection", "is not supported on SQLite (caller transactions are PostgreSQL only)"
            )
        checked = validate_new_jobs(jobs, self.settings.limits)
        if not checked:
            return []
        results = await self._db.call(transitions.enqueue, checked, ts_now(now))
        broadcast_jobs(self._db.key, [job.queue for job in checked])
        return results

    # -- worker path ------------------------------------------------------------------------

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
        check_name("worker_id", worker_id)
        limit, queues = checks.fetch(limit, queues)
        if limit == 0 or queues == []:
            return []
        return await self._db.call(
            transitions.fetch, worker_id, limit, queues, list(exclude_types), start, ts_now(now)
        )

    async def jobs_start(self, *, lease: Lease, now: datetime | None = None) -> Started | None:
        started = await self._db.call(transitions.start_many, [lease], ts_now(now))
        return started.get(lease.job_id)

    async def jobs_start_many(
        self, *, leases: Sequence[Lease], now: datetime | None = None
    ) -> dict[str, Started]:
        if not leases:
            return {}
        return await self._db.call(transitions.start_many, list(leases), ts_now(now))

    async def jobs_heartbeat(
        self, *, beats: Sequence[Heartbeat], now: datetime | None = None
    ) -> list[HeartbeatAck]:
        if not beats:
            return []
        clamped = [
            beat
            if beat.progress is None
            else Heartbeat(beat.lease, max(0, min(100, beat.progress)))
            for beat in beats
        ]
        return await self._db.call(transitions.heartbeat, clamped, ts_now(now))

    async def jobs_progress(
        self, *, lease: Lease, progress: int, now: datetime | None = None
    ) -> bool:
        if isinstance(progress, bool) or not isinstance(progress, int | float):
            raise ValidationError("progress", "must be an integer between 0 and 100")
        value = max(0, min(100, int(progress)))
        return await self._db.call(transitions.progress, lease, value, ts_now(now))

    async def jobs_release(
        self, *, leases: Sequence[Lease], now: datetime | None = None
    ) -> list[str]:
        if not leases:
            return []
        return await self._db.call(transitions.release, list(leases), ts_now(now))

    async def jobs_finalize(
        self, *, moves: Sequence[Move], now: datetime | None = None
    ) -> list[bool]:
        if not moves:
            return []
        return await self._db.call(transitions.finalize, list(moves), ts_now(now))

    # -- maintenance --------------------------------------------------------------------------

    async def jobs_rescue(
        self,
        *,
        fetched_timeout_seconds: float,
        processing_timeout_seconds: float,
        now: datetime | None = None,
    ) -> RescueResult:
        fetched, processing = checks.rescue_timeouts(
            fetched_timeout_seconds, processing_timeout_seconds
        )
        requeued, zombies = await self._db.call(
            transitions.rescue, fetched, processing, ts_now(now)
        )
        return RescueResult(requeued=tuple(requeued), zombies=tuple(zombies))

    def _batch(self, batch_size: int | None, limit: int | None) -> int:
        size = self.settings.cleanup_batch_size if batch_size is None else batch_size
        checks.positive_int("batch_size", size, 1_000_000)
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)):
            raise ValidationError("limit", "must be an integer")
        return size

    async def archive_purge(
        self, *, older_than: datetime, batch_size: int | None = None, limit: int | None = None
    ) -> int:
        size = self._batch(batch_size, limit)
        if limit is not None and limit <= 0:
            return 0
        cutoff = to_ts(older_than, "older_than")
        return await self._db.call(
            operators.purge_older, "archive_purge_batch", cutoff, size, limit
        )

    async def dlq_purge_older(
        self, *, older_than: datetime, batch_size: int | None = None, limit: int | None = None
    ) -> int:
        size = self._batch(batch_size, limit)
        if limit is not None and limit <= 0:
            return 0
        cutoff = to_ts(older_than, "older_than")
        return await self._db.call(operators.purge_older, "dlq_purge_batch", cutoff, size, limit)

    async def metrics_prune(self, *, older_than: datetime, width_seconds: int = 1) -> int:
        checks.positive_int("width_seconds", width_seconds, 86400)
        cutoff = to_ts(older_than, "older_than")
        return await self._db.call(operators.metrics_prune, cutoff, width_seconds)

    async def metrics_rollup(self, *, older_than: datetime) -> int:
        cutoff = to_ts(older_than, "older_than")
        return await self._db.call(operators.metrics_rollup, cutoff, ts_now(None))

    # -- operators ----------------------------------------------------------------------------

    def _edit(
        self,
        *,
        id: str,
        actor: str,
        payload: str | None,
        tags: Sequence[str] | None,
        priority: int | None,
        now: datetime | None,
    ) -> dict[str, object]:
        check_actor("actor", actor)
        checked = checks.edits(self.settings.limits, payload, tags, priority)
        return operators.edit_params(
            id=id,
            actor=actor,
            payload=checked.payload,
            tags=tags_in(checked.tags),
            set_tags=checked.tags is not None,
            priority=checked.priority,
            now=ts_now(now),
        )

    async def jobs_cancel(
        self, *, ids: Sequence[str], actor: str, now: datetime | None = None
    ) -> CancelResult:
        unique = checks.job_ids("ids", ids)
        check_actor("actor", actor)
        if not unique:
            return CancelResult((), (), ())
        cancelled, requested, missing = await self._db.call(
            operators.cancel, unique, actor, ts_now(now)
        )
        if requested:
            broadcast_cancel(self._db.key, requested)
        return CancelResult(tuple(cancelled), tuple(requested), tuple(missing))

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
        check_job_id("id", id)
        params = self._edit(
            id=id, actor=actor, payload=payload, tags=tags, priority=priority, now=now
        )
        return await self._db.call(operators.hot_edit, params)

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
        check_job_id("id", id)
        params = self._edit(
            id=id, actor=actor, payload=payload, tags=tags, priority=priority, now=now
        )
        return await self._db.call(operators.dlq_edit, params)

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
        unique = checks.job_ids("ids", ids)
        params = self._edit(
            id="", actor=actor, payload=payload, tags=tags, priority=priority, now=now
        )
        if not unique:
            return []
        moved, queues = await self._db.call(operators.resurrect, unique, params)
        broadcast_jobs(self._db.key, queues)
        return moved

    def _cap(self, cap: int) -> int:
        return checks.positive_int("cap", cap, self.settings.limits.max_batch)

    async def dlq_preview(self, *, filter: JobFilter, cap: int, sample: int = 10) -> Preview:
        self._cap(cap)
        if isinstance(sample, bool) or not isinstance(sample, int) or not 0 <= sample <= 1000:
            raise ValidationError("sample", "must be an integer between 0 and 1000")

        def run(db: Database) -> tuple[int, list[str]]:
            return db.read(operators.dlq_filter_ids, db, filter, min(cap, sample))

        matched, ids = await self._db.call(run)
        return Preview(
            matched=matched, will_affect=min(matched, cap), cap=cap, sample_ids=tuple(ids)
        )

    async def dlq_resurrect_by_filter(
        self, *, filter: JobFilter, actor: str, cap: int, now: datetime | None = None
    ) -> list[str]:
        self._cap(cap)
        params = self._edit(id="", actor=actor, payload=None, tags=None, priority=None, now=now)
        moved, queues = await self._db.call(operators.resurrect_by_filter, filter, cap, params)
        broadcast_jobs(self._db.key, queues)
        return moved

    async def dlq_purge(self, *, ids: Sequence[str], actor: str) -> list[str]:
        unique = checks.job_ids("ids", ids)
        check_actor("actor", actor)
        if not unique:
            return []
        return await self._db.call(operators.dlq_purge, unique)

    async def dlq_purge_by_filter(self, *, filter: JobFilter, actor: str, cap: int) -> list[str]:
        self._cap(cap)
        check_actor("actor", actor)
        return await self._db.call(operators.dlq_purge_by_filter, filter, cap)

    # -- reads ------------------------------------------------------------------------------

    async def stats_summary(self) -> Summary:
        return await self._db.call(reads.stats_summary)

    async def stats_queues(self, *, now: datetime | None = None) -> list[QueueStats]:
        return await self._db.call(reads.stats_queues, ts_now(now))

    async def stats_throughput(self, *, now: datetime | None = None) -> Throughput:
        return await self._db.call(reads.stats_throughput, ts_now(now))

    async def stats_series(
        self,
        *,
        since: datetime,
        until: datetime | None = None,
        width_seconds: int = 1,
        queue: str | None = None,
    ) -> list[SeriesPoint]:
        start = to_ts(since, "since")
        end = None if until is None else to_ts(until, "until")
        checks.positive_int("width_seconds", width_seconds, 86400)
        return await self._db.call(reads.stats_series, start, end, width_seconds, queue)

    async def dlq_top_errors(self, *, limit: int = 5, scan: int = 5000) -> list[ErrorGroup]:
        checks.positive_int("limit", limit, 1000)
        checks.positive_int("scan", scan, 1_000_000)
        return await self._db.call(reads.top_errors, limit, scan)

    async def jobs_page(
        self,
        *,
        pillar: Pillar,
        filter: JobFilter = JobFilter(),  # noqa: B008 - frozen, so sharing it is safe
        sort: str = "date",
        descending: bool = True,
        page: int = 1,
        page_size: int = 100,
    ) -> Page[JobView]:
        pillar = Pillar(pillar)
        order = reads.order_by(pillar, sort, descending)
        checks.page_size(page_size)
        checks.positive_int("page", page, 10_000_000)
        return await self._db.call(reads.jobs_page, pillar, filter, order, page, page_size)

    async def job_get(self, id: str) -> JobView | None:
        check_job_id("id", id)
        return await self._db.call(reads.job_get, id)

    # -- queues -----------------------------------------------------------------------------

    async def queue_list(self) -> list[QueueInfo]:
        return await self._db.call(control.queue_list)

    async def queue_ensure(self, name: str) -> QueueInfo:
        check_name("name", name)
        return await self._db.call(control.queue_ensure, name, ts_now(None))

    async def queue_pause(self, *, name: str, paused: bool, actor: str | None = None) -> QueueInfo:
        check_name("name", name)
        check_actor("actor", actor)
        return await self._db.call(
            control.queue_set, "queue_set_paused", name, bool(paused), actor, ts_now(None)
        )

    async def queue_activate(
        self, *, name: str, active: bool, actor: str | None = None
    ) -> QueueInfo:
        check_name("name", name)
        check_actor("actor", actor)
        return await self._db.call(
            control.queue_set, "queue_set_active", name, bool(active), actor, ts_now(None)
        )

    async def queue_configure(
        self,
        *,
        name: str,
        max_workers: int | None = UNSET,
        zombie_timeout_seconds: float | None = UNSET,
        execution_timeout_seconds: float | None = UNSET,
        actor: str | None = None,
    ) -> QueueInfo:
        check_name("name", name)
        check_actor("actor", actor)
        limits = checks.queue_limits(
            max_workers=max_workers,
            zombie_timeout_seconds=zombie_timeout_seconds,
            execution_timeout_seconds=execution_timeout_seconds,
        )
        values = {
            "max_workers": limits.max_workers,
            "zombie": limits.zombie_timeout_seconds,
            "execution": limits.execution_timeout_seconds,
        }
        params: dict[str, object] = {"name": name, "actor": actor, "now": ts_now(None)}
        for key, value in values.items():
            params[f"set_{key}"] = int(value is not UNSET)
            params[key] = None if value is UNSET else value
        return await self._db.call(control.queue_configure, params)

    # -- workers ----------------------------------------------------------------------------

    async def worker_beat(self, info: WorkerInfo, *, now: datetime | None = None) -> WorkerControl:
        check_name("info.id", info.id)
        return await self._db.call(control.worker_beat, info, ts_now(now))

    async def worker_remove(self, *, worker_id: str) -> None:
        await self._db.call(control.worker_remove, worker_id)

    async def workers_list(
        self, *, alive_within_seconds: float = 60.0, now: datetime | None = None
    ) -> list[WorkerInfo]:
        since = ts_now(now) - float(alive_within_seconds)
        return await self._db.call(control.workers_list, since)

    async def worker_request(
        self,
        *,
        worker_id: str | None,
        concurrency: int | None = None,
        close_circuit: str | None = None,
    ) -> int:
        checks.worker_request(concurrency, close_circuit)
        if worker_id is not None and len(worker_id) > MAX_NAME_LENGTH:
            raise ValidationError("worker_id", f"must be at most {MAX_NAME_LENGTH} characters")
        return await self._db.call(control.worker_request, worker_id, concurrency, close_circuit)
