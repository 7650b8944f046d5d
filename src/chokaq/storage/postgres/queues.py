"""Queues and workers on PostgreSQL: the control plane (pause, activate, limits) and the worker
registry (beats, operator requests).

Owns mapping these commands onto one statement or one short transaction each. Arguments arrive
checked; this module holds no SQL text.
"""

from __future__ import annotations

import json
from datetime import datetime

from ...models import QueueInfo, WorkerControl, WorkerInfo
from ..checks import UNSET, QueueLimits
from .connection import PostgresCore
from .rows import join_tags, queue_info, worker_info

__all__ = ["PostgresQueues"]


class PostgresQueues(PostgresCore):
    """The ``queues`` and ``workers`` tables."""

    # -- queues -----------------------------------------------------------------------------

    async def queue_list(self) -> list[QueueInfo]:
        return [queue_info(row) for row in await self._rows("queue_list")]

    async def queue_get(self, name: str) -> QueueInfo | None:
        row = await self._one("queue_get", {"name": name})
        return None if row is None else queue_info(row)

    async def queue_ensure(self, name: str) -> QueueInfo:
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

    async def queue_pause(self, name: str, paused: bool, actor: str | None) -> QueueInfo:
        row = await self._one("queue_pause", {"name": name, "paused": paused, "actor": actor})
        assert row is not None
        return queue_info(row)

    async def queue_activate(self, name: str, active: bool, actor: str | None) -> QueueInfo:
        row = await self._one("queue_activate", {"name": name, "active": active, "actor": actor})
        assert row is not None
        return queue_info(row)

    async def queue_hide(self, name: str, hidden: bool, actor: str | None) -> QueueInfo:
        row = await self._one("queue_hide", {"name": name, "hidden": hidden, "actor": actor})
        assert row is not None
        return queue_info(row)

    async def jobs_wake(self, queues: list[str] | None) -> None:
        if queues is None:
            await self._rows("queues_wake", {"channel": self.channel})
        else:
            await self._rows("queue_wake", {"channel": self.channel, "names": queues})

    async def queue_configure(self, name: str, limits: QueueLimits, actor: str | None) -> QueueInfo:
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

    async def worker_beat(self, info: WorkerInfo, now: datetime | None) -> WorkerControl:
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

    async def worker_remove(self, worker_id: str) -> None:
        await self._count("worker_remove", {"id": worker_id})

    async def workers_list(
        self, alive_within_seconds: float, now: datetime | None
    ) -> list[WorkerInfo]:
        rows = await self._rows("workers_list", {"within": alive_within_seconds, "now": now})
        return [worker_info(row) for row in rows]

    async def worker_request(
        self, worker_id: str | None, concurrency: int | None, close_circuit: str | None
    ) -> int:
        return await self._count(
            "worker_request",
            {"id": worker_id, "concurrency": concurrency, "circuit": close_circuit},
        )
