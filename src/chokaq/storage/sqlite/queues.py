"""The control plane on SQLite: queue rows (pause, activate, limits) and worker rows.

Each function runs on the connection's thread in one short write transaction, or a read.
Owns these tables' statements only; arguments arrive checked by the storage seam.
"""

from __future__ import annotations

import json
from datetime import datetime

from ...models import QueueInfo, WorkerControl, WorkerInfo
from ..checks import UNSET, QueueLimits
from .connection import Database, SQLiteCore
from .jobs import ensure_queues
from .notify import ANY_QUEUE, broadcast_jobs
from .rows import queue_info, ts_now, worker_info

__all__ = [
    "SQLiteQueues",
    "queue_configure",
    "queue_ensure",
    "queue_get",
    "queue_list",
    "queue_set",
    "worker_beat",
    "worker_remove",
    "worker_request",
    "workers_list",
]


def _get(db: Database, name: str) -> QueueInfo:
    return queue_info(db.conn.execute(db.q["queue_get"], {"name": name}).fetchone())


def queue_get(db: Database, name: str) -> QueueInfo | None:
    row = db.conn.execute(db.q["queue_get"], {"name": name}).fetchone()
    return None if row is None else queue_info(row)


def queue_list(db: Database) -> list[QueueInfo]:
    return [queue_info(row) for row in db.conn.execute(db.q["queue_list"]).fetchall()]


def queue_ensure(db: Database, name: str, now: float) -> QueueInfo:
    def run() -> QueueInfo:
        ensure_queues(db, [name], now)
        return _get(db, name)

    return db.write(run)


def queue_set(
    db: Database, query: str, name: str, flag: bool, actor: str | None, now: float
) -> QueueInfo:
    """Set ``paused`` (``queue_pause``), ``active`` (``queue_activate``) or ``hidden``
    (``queue_hide``)."""

    def run() -> QueueInfo:
        ensure_queues(db, [name], now)
        db.conn.execute(
            db.q[query], {"name": name, "flag": 1 if flag else 0, "actor": actor, "now": now}
        )
        return _get(db, name)

    return db.write(run)


def queue_configure(db: Database, params: dict[str, object]) -> QueueInfo:
    def run() -> QueueInfo:
        name = str(params["name"])
        ensure_queues(db, [name], float(params["now"]))  # type: ignore[arg-type]
        db.conn.execute(db.q["queue_configure"], params)
        return _get(db, name)

    return db.write(run)


def worker_beat(db: Database, info: WorkerInfo, now: float) -> WorkerControl:
    params = {
        "id": info.id,
        "hostname": info.hostname,
        "pid": info.pid,
        "queues": json.dumps(list(info.queues)),
        "concurrency": info.concurrency,
        "running": info.running,
        "state": info.state,
        "circuits": info.circuits,
        "started_at": info.started_at.timestamp(),
        "now": now,
    }

    def run() -> WorkerControl:
        desired, close = db.conn.execute(db.q["worker_beat"], params).fetchone()
        circuits = tuple(json.loads(close or "[]"))
        if circuits:
            db.conn.execute(db.q["worker_close_circuits"], {"id": info.id})
        return WorkerControl(desired_concurrency=desired, close_circuits=circuits)

    return db.write(run)


def worker_remove(db: Database, worker_id: str) -> None:
    db.write(lambda: db.conn.execute(db.q["worker_remove"], {"id": worker_id}))


def workers_list(db: Database, since: float) -> list[WorkerInfo]:
    rows = db.conn.execute(db.q["workers_list"], {"since": since}).fetchall()
    return [worker_info(row) for row in rows]


def worker_request(
    db: Database, worker_id: str | None, concurrency: int | None, circuit: str | None
) -> int:
    params = {"id": worker_id, "concurrency": concurrency, "circuit": circuit}
    return db.write(lambda: db.conn.execute(db.q["worker_request"], params).rowcount)


class SQLiteQueues(SQLiteCore):
    """Queues and workers: the control plane, and waking workers."""

    async def jobs_wake(self, queues: list[str] | None) -> None:
        broadcast_jobs(self._db.key, [ANY_QUEUE] if queues is None else queues)

    async def queue_list(self) -> list[QueueInfo]:
        return await self._db.call(queue_list)

    async def queue_get(self, name: str) -> QueueInfo | None:
        return await self._db.call(queue_get, name)

    async def queue_ensure(self, name: str) -> QueueInfo:
        return await self._db.call(queue_ensure, name, ts_now(None))

    async def queue_pause(self, name: str, paused: bool, actor: str | None) -> QueueInfo:
        return await self._db.call(queue_set, "queue_pause", name, paused, actor, ts_now(None))

    async def queue_hide(self, name: str, hidden: bool, actor: str | None) -> QueueInfo:
        return await self._db.call(queue_set, "queue_hide", name, hidden, actor, ts_now(None))

    async def queue_activate(self, name: str, active: bool, actor: str | None) -> QueueInfo:
        return await self._db.call(queue_set, "queue_activate", name, active, actor, ts_now(None))

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
        return await self._db.call(queue_configure, params)

    async def worker_beat(self, info: WorkerInfo, now: datetime | None) -> WorkerControl:
        return await self._db.call(worker_beat, info, ts_now(now))

    async def worker_remove(self, worker_id: str) -> None:
        await self._db.call(worker_remove, worker_id)

    async def workers_list(
        self, alive_within_seconds: float, now: datetime | None
    ) -> list[WorkerInfo]:
        return await self._db.call(workers_list, ts_now(now) - alive_within_seconds)

    async def worker_request(
        self, worker_id: str | None, concurrency: int | None, close_circuit: str | None
    ) -> int:
        return await self._db.call(worker_request, worker_id, concurrency, close_circuit)
