"""Operator commands of the PostgreSQL backend: cancel, edit, DLQ resurrection and purges, the
queue control plane and the worker registry.

Owns mapping each command onto one statement (or one short transaction), after the argument
rules of ``chokaq.storage.checks``. Lifetime counters are only ever incremented here (cancel);
nothing in this module decrements them. It must not hold SQL text.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ...errors import ValidationError
from ...limits import check_actor, check_job_id, check_name
from ...models import (
    CancelResult,
    JobFilter,
    Preview,
    QueueInfo,
    WorkerControl,
    WorkerInfo,
)
from .. import checks
from ..base import UNSET
from .reads import PostgresReads, filter_params
from .rows import join_tags, queue_info, worker_info

__all__ = ["PostgresOperators"]


def _ids(field: str, ids: Sequence[str]) -> list[str]:
    return list(checks.job_ids(field, ids))


def _cap(cap: int) -> int:
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 0:
        raise ValidationError("cap", "must be a non-negative integer")
    return cap


def _edits(
    limits: Any, payload: str | None, tags: Sequence[str] | None, priority: int | None
) -> dict[str, Any]:
    checked = checks.edits(limits, payload, tags, priority)
    return {
        "payload": checked.payload,
        "set_tags": checked.tags is not None,
        "tags": join_tags(checked.tags) if checked.tags is not None else None,
        "priority": checked.priority,
    }


class PostgresOperators(PostgresReads):
    """Commands an operator (Deck, CLI, client) sends."""

    # -- jobs -------------------------------------------------------------------------------

    async def jobs_cancel(
        self, *, ids: Sequence[str], actor: str, now: datetime | None = None
    ) -> CancelResult:
        wanted = _ids("ids", ids)
        check_actor("actor", actor)
        if not wanted:
            return CancelResult(cancelled=(), requested=(), not_found=())
        params = {"actor": actor, "now": now, "channel": self.channel}
        rows = await self._rows_each("jobs_cancel", params, wanted)
        cancelled = {row[0] for row in rows if row[1] is True}
        requested = {row[0] for row in rows if row[1] is False}
        return CancelResult(
            cancelled=tuple(i for i in wanted if i in cancelled),
            requested=tuple(i for i in wanted if i in requested),
            not_found=tuple(i for i in wanted if i not in cancelled and i not in requested),
        )

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
        check_actor("actor", actor)
        params = _edits(self.settings.limits, payload, tags, priority)
        return await self._count("jobs_edit", {**params, "id": id, "actor": actor, "now": now}) > 0

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
        check_actor("actor", actor)
        params = _edits(self.settings.limits, payload, tags, priority)
        return await self._count("dlq_edit", {**params, "id": id, "actor": actor}) > 0

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
        wanted = _ids("ids", ids)
        check_actor("actor", actor)
        params = _edits(self.settings.limits, payload, tags, priority)
        if not wanted:
            return []
        rows = await self._rows_each(
            "dlq_resurrect", {**params, "actor": actor, "now": now, "channel": self.channel}, wanted
        )
        moved = {row[0] for row in rows if row[0] is not None}
        return [i for i in wanted if i in moved]

    async def dlq_preview(self, *, filter: JobFilter, cap: int, sample: int = 10) -> Preview:
        params = filter_params(filter)
        _cap(cap)
        async with self.pool.connection() as conn:
            cur = await conn.execute(self._q["dlq_match_count"], params)
            row = await cur.fetchone()
            matched = int(row[0]) if row is not None else 0
            cur = await conn.execute(
                self._q["dlq_match_ids"], {**params, "cap": max(0, min(sample, cap))}
            )
            sample_ids = tuple(r[0] for r in await cur.fetchall())
        return Preview(
            matched=matched, will_affect=min(matched, cap), cap=cap, sample_ids=sample_ids
        )

    async def dlq_resurrect_by_filter(
        self, *, filter: JobFilter, actor: str, cap: int, now: datetime | None = None
    ) -> list[str]:
        params = filter_params(filter)
        check_actor("actor", actor)
        if _cap(cap) == 0:
            return []
        wanted = [r[0] for r in await self._rows("dlq_match_ids", {**params, "cap": cap})]
        if not wanted:
            return []
        edits = _edits(self.settings.limits, None, None, None)
        rows = await self._rows_each(
            "dlq_resurrect", {**edits, "actor": actor, "now": now, "channel": self.channel}, wanted
        )
        moved = {r[0] for r in rows if r[0] is not None}
        return [i for i in wanted if i in moved]

    async def dlq_purge(self, *, ids: Sequence[str], actor: str) -> list[str]:
        wanted = _ids("ids", ids)
        check_actor("actor", actor)
        if not wanted:
            return []
        deleted = {row[0] for row in await self._rows("dlq_purge", {"ids": wanted})}
        return [i for i in wanted if i in deleted]

    async def dlq_purge_by_filter(self, *, filter: JobFilter, actor: str, cap: int) -> list[str]:
        params = filter_params(filter)
        check_actor("actor", actor)
        if _cap(cap) == 0:
            return []
        async with self.pool.connection() as conn, conn.transaction():
            cur = await conn.execute(self._q["dlq_match_ids"], {**params, "cap": cap})
            wanted = [r[0] for r in await cur.fetchall()]
            if not wanted:
                return []
            cur = await conn.execute(self._q["dlq_purge"], {"ids": wanted})
            deleted = {r[0] for r in await cur.fetchall()}
        return [i for i in wanted if i in deleted]

    # -- queues -----------------------------------------------------------------------------

    async def queue_list(self) -> list[QueueInfo]:
        return [queue_info(row) for row in await self._rows("queue_list")]

    async def queue_ensure(self, name: str) -> QueueInfo:
        check_name("name", name)
        async with self.pool.connection() as conn:
            cur = await conn.execute(self._q["queue_ensure"], {"name": name})
            row = await cur.fetchone()
            if row is None:
                # A racing creator committed after this statement's snapshot: read it again.
                cur = await conn.execute(self._q["queue_get"], {"name": name})
                row = await cur.fetchone()
            await conn.execute(self._q["queue_stats_row"], {"name": name})
        assert row is not None
        return queue_info(row)

    async def queue_pause(self, *, name: str, paused: bool, actor: str | None = None) -> QueueInfo:
        check_name("name", name)
        check_actor("actor", actor)
        row = await self._one("queue_pause", {"name": name, "paused": bool(paused), "actor": actor})
        assert row is not None
        return queue_info(row)

    async def queue_activate(
        self, *, name: str, active: bool, actor: str | None = None
    ) -> QueueInfo:
        check_name("name", name)
        check_actor("actor", actor)
        row = await self._one(
            "queue_activate", {"name": name, "active": bool(active), "actor": actor}
        )
        assert row is not None
        return queue_info(row)

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
        set_mw = limits.max_workers is not UNSET
        set_zombie = limits.zombie_timeout_seconds is not UNSET
        set_exec = limits.execution_timeout_seconds is not UNSET
        if set_mw:
            self._bulkheads_read_at = float("-inf")  # the next fetch re-reads the bulkheads
        row = await self._one(
            "queue_configure",
            {
                "name": name,
                "max_workers": limits.max_workers if set_mw else None,
                "zombie": limits.zombie_timeout_seconds if set_zombie else None,
                "execution": limits.execution_timeout_seconds if set_exec else None,
                "set_max_workers": set_mw,
                "set_zombie": set_zombie,
                "set_execution": set_exec,
                "actor": actor,
            },
        )
        assert row is not None
        return queue_info(row)

    # -- workers ----------------------------------------------------------------------------

    async def worker_beat(self, info: WorkerInfo, *, now: datetime | None = None) -> WorkerControl:
        params = {
            "id": info.id,
            "hostname": info.hostname,
            "pid": info.pid,
            "queues": join_tags(info.queues),
            "concurrency": info.concurrency,
            "desired": info.desired_concurrency,
            "running": info.running,
            "state": info.state,
            "circuits": info.circuits,
            "started_at": info.started_at,
            "now": now,
        }
        async with self.pool.connection() as conn, conn.transaction():
            cur = await conn.execute(self._q["worker_close_circuits"], {"id": info.id})
            previous = await cur.fetchone()
            cur = await conn.execute(self._q["worker_beat"], params)
            beat = await cur.fetchone()
        assert beat is not None
        row = (beat[0], previous[0] if previous is not None else None)
        circuits: tuple[str, ...] = ()
        if row[1]:
            decoded = json.loads(row[1])
            if isinstance(decoded, list):
                circuits = tuple(str(c) for c in decoded)
        return WorkerControl(desired_concurrency=row[0], close_circuits=circuits)

    async def worker_remove(self, *, worker_id: str) -> None:
        await self._count("worker_remove", {"id": worker_id})

    async def workers_list(
        self, *, alive_within_seconds: float = 60.0, now: datetime | None = None
    ) -> list[WorkerInfo]:
        rows = await self._rows("workers_list", {"within": float(alive_within_seconds), "now": now})
        return [worker_info(row) for row in rows]

    async def worker_request(
        self,
        *,
        worker_id: str | None,
        concurrency: int | None = None,
        close_circuit: str | None = None,
    ) -> int:
        checks.worker_request(concurrency, close_circuit)
        return await self._count(
            "worker_request",
            {"id": worker_id, "concurrency": concurrency, "circuit": close_circuit},
        )
