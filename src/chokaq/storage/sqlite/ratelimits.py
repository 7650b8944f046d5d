"""Rate limits and partitions on SQLite: the limited claim, declarations, settings, the list.

The limited claim runs in one write transaction (``BEGIN IMMEDIATE``): the write lock is what
makes claims of a limited key take turns, across processes. Every decision is
``chokaq.storage.throttle``'s; this module reads its inputs and writes what it decided. Runs on
the connection's thread; arguments arrive checked; no SQL text here.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ...errors import NotFoundError
from ...models import ClaimedJob, LeaderTerm, LimitInfo, TypeLimit
from ...rates import RATE_WINDOW_SECONDS
from .. import throttle
from ..checks import UNSET
from ..driver import UndecodableRow
from ..throttle import Candidate, Settled, describe, pick, plan, put_params, settle, spend
from .claims import claim_ids
from .connection import Database, SQLiteCore
from .leadership import check_fence
from .rows import from_ts, given_ts, ts_now

__all__ = [
    "SQLiteLimits",
    "active",
    "declare",
    "fetch_limited",
    "listed",
    "reset",
    "set_limit",
    "tidy",
]

# The most partitioned types a claim walks (a skip scan step each to find them).
MAX_WALKED_TYPES = 1000


def _partitioned_types(db: Database) -> list[str]:
    found: list[str] = []
    after = ""
    while len(found) < MAX_WALKED_TYPES:
        row = db.conn.execute(db.q["limits_next_partitioned_type"], {"after": after}).fetchone()
        if row is None:
            break
        found.append(row[0])
        after = row[0]
    return found


def active(db: Database) -> tuple[list[str], list[str], list[str]]:
    def run() -> tuple[list[str], list[str], list[str]]:
        queues, types = throttle.active(db.conn.execute(db.q["limits_rows"]).fetchall())
        return queues, types, _partitioned_types(db)

    return db.read(run)


def _walk(db: Database, type_: str, cursor: str, steps: int) -> list[str]:
    """Up to ``steps`` partitions of ``type_`` with pending jobs: those after ``cursor``,
    then from the first up to it."""
    q, conn = db.q["limits_next_partition"], db.conn
    found: list[str] = []
    after = cursor
    while len(found) < steps:
        row = conn.execute(q, {"type": type_, "after": after}).fetchone()
        if row is None:
            break
        found.append(row[0])
        after = row[0]
    after = ""
    while cursor and len(found) < steps:
        row = conn.execute(q, {"type": type_, "after": after}).fetchone()
        if row is None or row[0] > cursor:
            break
        found.append(row[0])
        after = row[0]
    return found


def fetch_limited(
    db: Database,
    worker_id: str,
    limit: int,
    queues: Sequence[str] | None,
    exclude_types: Sequence[str],
    start: bool,
    given: float | None,
) -> tuple[list[ClaimedJob | UndecodableRow], float | None]:
    def run() -> tuple[list[ClaimedJob | UndecodableRow], float | None]:
        # Read under the write lock: the rate is spent at this clock and the jobs start at it,
        # never before the claim could see the slot it takes free.
        now = time.time() if given is None else given
        conn, q = db.conn, db.q
        rooms = throttle.rooms(conn.execute(q["limits_serving"]).fetchall(), queues, limit)
        limits = throttle.limit_rows(conn.execute(q["limits_rows"]).fetchall(), rooms)
        running = {(r[0], r[1]): int(r[2]) for r in conn.execute(q["limits_running"]).fetchall()}
        tats = {
            (r[0], r[1], r[2]): float(r[3])
            for r in conn.execute(q["limits_tats"], {"now": now}).fetchall()
        }
        decided = plan(limits, _partitioned_types(db), running, tats, now, limit, exclude_types)
        for name, quota in decided.queue_quota.items():
            if name in rooms:
                rooms[name] = min(rooms[name], quota)
        serving = [name for name, room in rooms.items() if room > 0]
        candidates: list[Candidate] = []
        exclude = json.dumps(decided.exclude)
        for name in serving:
            params = {"queue": name, "now": now, "exclude": exclude, "limit": rooms[name]}
            for r in conn.execute(q["limits_queue_head"], params).fetchall():
                candidates.append(Candidate(r[0], r[1], r[2], None, r[3], r[4], r[5]))
            for type_, quota in decided.plain_quota.items():
                if quota <= 0 or type_ in exclude_types:
                    continue
                params = {
                    "queue": name,
                    "type": type_,
                    "now": now,
                    "limit": min(quota, rooms[name]),
                }
                for r in conn.execute(q["limits_type_head"], params).fetchall():
                    candidates.append(Candidate(r[0], r[1], r[2], None, r[3], r[4], r[5]))
        served = json.dumps(serving)
        for walk in decided.walks if serving else ():
            for order, partition in enumerate(_walk(db, walk.type, walk.cursor, walk.steps), 1):
                quota = min(walk.quotas.get(partition, walk.default), limit)
                if quota <= 0:
                    continue
                params = {
                    "type": walk.type,
                    "partition": partition,
                    "now": now,
                    "queues": served,
                    "limit": quota,
                }
                for r in conn.execute(q["limits_partition_head"], params).fetchall():
                    candidates.append(
                        Candidate(r[0], r[1], r[2], partition, r[3], r[4], r[5], order)
                    )
        picked = pick(candidates, decided, rooms, limit)
        if not picked:
            return [], decided.retry_at
        spent = spend(picked, limits, tats, now)
        for scope, name, partition, tat in spent.tats:
            conn.execute(
                q["limits_spend_tat"],
                {"scope": scope, "name": name, "partition": partition, "tat": tat},
            )
        for name, cursor in spent.cursors.items():
            conn.execute(q["limits_spend_cursor"], {"name": name, "cursor": cursor, "now": now})
        retry = [t for t in (decided.retry_at, spent.retry_at) if t is not None]
        return claim_ids(db, worker_id, [c.id for c in picked], start, now), min(
            retry, default=None
        )

    return db.write(run)


# -- declarations and settings --------------------------------------------------------------


def _row(db: Database, scope: str, name: str) -> Any:
    return db.conn.execute(db.q["limits_get"], {"scope": scope, "name": name}).fetchone()


def _put(db: Database, scope: str, name: str, row: Settled, actor: str | None, now: float) -> None:
    db.conn.execute(db.q["limits_put"], {**put_params(scope, name, row, actor), "now": now})


def declare(db: Database, limits: Sequence[TypeLimit], now: float) -> None:
    def run() -> None:
        for limit in limits:
            declared = (limit.rate_limit, limit.partition_concurrency)
            row = settle(_row(db, "type", limit.type), declared=declared)
            _put(db, "type", limit.type, row, None, now)

    db.write(run)


def set_limit(
    db: Database,
    scope: str,
    name: str,
    rate: object,
    concurrency: object,
    actor: str | None,
    now: float,
) -> LimitInfo:
    def run() -> None:
        row = settle(_row(db, scope, name), rate=rate, concurrency=concurrency, unset=UNSET)
        _put(db, scope, name, row, actor, now)

    db.write(run)
    return listed(db, now, (scope, name))[0]


def reset(db: Database, scope: str, name: str, actor: str | None, now: float) -> LimitInfo:
    def run() -> bool:
        row = _row(db, scope, name)
        if row is None:
            return False
        settled = settle(row, reset=True, rate=UNSET, concurrency=UNSET, unset=UNSET)
        _put(db, scope, name, settled, actor, now)
        return True

    if not db.write(run):
        raise NotFoundError(f"no limit for {scope} {name!r}")
    return listed(db, now, (scope, name))[0]


# -- the list --------------------------------------------------------------------------------


def listed(db: Database, now: float, only: tuple[str, str] | None = None) -> list[LimitInfo]:
    def run() -> list[LimitInfo]:
        conn, q = db.conn, db.q
        if only is None:
            rows = conn.execute(q["limits_all"]).fetchall()
        else:
            rows = [r for r in [_row(db, *only)] if r is not None]
        tats = {
            (r[0], r[1], r[2]): float(r[3])
            for r in conn.execute(q["limits_tats"], {"now": now}).fetchall()
        }
        out = []
        for r in rows:
            scope, name = r[0], r[1]
            started = conn.execute(
                q["limits_load_started"],
                {"since": now - RATE_WINDOW_SECONDS, "scope": scope, "name": name},
            ).fetchone()[0]
            loads = [
                (part, int(due or 0), int(busy or 0))
                for part, due, busy in conn.execute(
                    q["limits_load_pending"], {"now": now, "scope": scope, "name": name}
                ).fetchall()
            ]
            moment = from_ts(r[8])
            assert moment is not None
            out.append(describe(r, moment, started / RATE_WINDOW_SECONDS, loads, tats, now))
        return out

    return db.read(run)


def tidy(db: Database, before: float, fence: LeaderTerm | None) -> int:
    def run() -> int:
        check_fence(db, fence)
        return db.conn.execute(db.q["limit_state_tidy"], {"before": before}).rowcount

    return db.write(run)


class SQLiteLimits(SQLiteCore):
    """Rate and concurrency limits: the limited claim, declarations, operators' settings."""

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
            fetch_limited, worker_id, limit, queues_, exclude_types, start, given_ts(now)
        )
        return rows, from_ts(retry_at)

    async def limits_active(self) -> tuple[list[str], list[str], list[str]]:
        return await self._db.call(active)

    async def limits_declare(self, limits: list[TypeLimit]) -> None:
        await self._db.call(declare, limits, ts_now(None))

    async def limit_set(
        self,
        scope: str,
        name: str,
        rate: str | object | None,
        concurrency: int | object | None,
        actor: str | None,
    ) -> LimitInfo:
        return await self._db.call(set_limit, scope, name, rate, concurrency, actor, ts_now(None))

    async def limit_reset(self, scope: str, name: str, actor: str | None) -> LimitInfo:
        return await self._db.call(reset, scope, name, actor, ts_now(None))

    async def limits_list(self, now: datetime | None) -> list[LimitInfo]:
        return await self._db.call(listed, ts_now(now))
