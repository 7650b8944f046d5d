"""Rate limits and partitions on PostgreSQL: the limited claim, declarations, settings, the list.

The limited claim is one transaction: it locks the ``limits`` rows first (every limited claim
does, in one order, so claims of limited keys take turns across processes and hosts), reads the
running counts and rate state with the snapshot that follows the lock, reads candidates
(``FOR UPDATE SKIP LOCKED``), claims what ``chokaq.storage.throttle`` picked and writes what it
spent. Every decision is the planner's, as on SQLite. Arguments arrive checked; no SQL text.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ...errors import NotFoundError
from ...models import ClaimedJob, LimitInfo, TypeLimit
from ...rates import RATE_WINDOW_SECONDS
from .. import throttle
from ..checks import UNSET
from ..driver import UndecodableRow
from ..throttle import Candidate, Settled, describe, pick, plan, put_params, settle, spend
from .connection import PostgresCore
from .rows import claimed_rows

__all__ = ["PostgresLimits"]


def _at(epoch: float | None) -> datetime | None:
    return None if epoch is None else datetime.fromtimestamp(epoch, UTC)


class PostgresLimits(PostgresCore):
    """The ``limits`` and ``limit_state`` tables and the limited claim."""

    async def limits_active(self) -> tuple[list[str], list[str], list[str]]:
        queues, types = throttle.active(await self._rows("limits_rows"))
        partitioned = [r[0] for r in await self._rows("limits_partitioned_types")]
        return queues, types, partitioned

    async def jobs_fetch_limited(
        self,
        worker_id: str,
        limit: int,
        queues: list[str] | None,
        exclude_types: list[str],
        start: bool,
        now: datetime | None,
    ) -> tuple[list[ClaimedJob | UndecodableRow], datetime | None]:
        q = self._q
        # Pipelined: each batch of statements that do not need each other's results costs one
        # round trip (BEGIN and the reads under the locks; the heads and the walks; the
        # partitions' heads; the spend, the claim and COMMIT). The server still runs them in
        # order, so every read after the locks sees the claim that held them last.
        async with self.pool.connection() as conn:
            async with conn.pipeline(), conn.transaction():

                async def send(name: str, params: dict[str, Any]) -> Any:
                    return await conn.execute(q[name], params)

                await send(
                    "jobs_fetch_lock",
                    {"prefix": f"chokaq-bulkhead:{self.schema}:", "queues": queues},
                )
                reads = [
                    await send(name, params)
                    for name, params in (
                        ("limits_lock", {}),
                        ("limits_serving", {}),
                        ("limits_running", {}),
                        ("limits_clock", {"now": now}),
                        ("limits_tats", {"now": now}),
                        ("limits_partitioned_types", {}),
                    )
                ]
                locked, serving_rows, running_rows, clocked, tat_rows, partitioned_rows = [
                    await cur.fetchall() for cur in reads
                ]
                clock = clocked[0][0]
                rooms = throttle.rooms(serving_rows, queues, limit)
                limits = throttle.limit_rows(locked, rooms)
                running = {(r[0], r[1]): int(r[2]) for r in running_rows}
                tats = {(r[0], r[1], r[2]): float(r[3]) for r in tat_rows}
                partitioned = [r[0] for r in partitioned_rows]
                decided = plan(limits, partitioned, running, tats, clock, limit, exclude_types)
                for name, quota in decided.queue_quota.items():
                    if name in rooms:
                        rooms[name] = min(rooms[name], quota)
                serving = [name for name, room in rooms.items() if room > 0]
                heads: tuple[list[str], list[str | None], list[int]] = ([], [], [])
                for name in serving:
                    heads[0].append(name)
                    heads[1].append(None)
                    heads[2].append(rooms[name])
                    for type_, quota in decided.plain_quota.items():
                        if quota > 0 and type_ not in exclude_types:
                            heads[0].append(name)
                            heads[1].append(type_)
                            heads[2].append(min(quota, rooms[name]))
                head_cur = None
                if heads[0]:
                    params = {
                        "queues": heads[0],
                        "types": heads[1],
                        "limits": heads[2],
                        "exclude": decided.exclude,
                        "now": now,
                    }
                    head_cur = await send("limits_queue_heads", params)
                # Each walk from the partition after its cursor, and (sent at once, used only for
                # what the first part leaves) wrapped round from the first partition to the cursor.
                walks = []
                for walk in decided.walks if serving else ():
                    after = {"type": walk.type, "after": walk.cursor, "steps": walk.steps}
                    first = await send("limits_walk", {**after, "before": None})
                    wrapped = None
                    if walk.cursor:
                        wrapped = await send(
                            "limits_walk", {**after, "after": "", "before": walk.cursor}
                        )
                    walks.append((walk, first, wrapped))
                candidates: list[Candidate] = []
                if head_cur is not None:
                    for r in await head_cur.fetchall():
                        candidates.append(Candidate(r[0], r[1], r[2], None, r[3], r[4], r[5]))
                part_curs = []
                for walk, first, wrapped in walks:
                    walked = [r[0] for r in await first.fetchall()]
                    if wrapped is not None:
                        walked += [r[0] for r in await wrapped.fetchall()][
                            : walk.steps - len(walked)
                        ]
                    parts, quotas, ords = [], [], []
                    for order, part in enumerate(walked, 1):
                        quota = min(walk.quotas.get(part, walk.default), limit)
                        if quota > 0:
                            parts.append(part)
                            quotas.append(quota)
                            ords.append(order)
                    if parts:
                        params = {
                            "type": walk.type,
                            "parts": parts,
                            "quotas": quotas,
                            "ords": ords,
                            "serving": serving,
                            "now": now,
                        }
                        part_curs.append(await send("limits_partition_heads", params))
                for cur in part_curs:
                    for r in await cur.fetchall():
                        candidates.append(Candidate(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]))
                picked = pick(candidates, decided, rooms, limit)
                if not picked:
                    return [], _at(decided.retry_at)
                spent = spend(picked, limits, tats, clock)
                await send(
                    "limits_spend",
                    {
                        "scopes": [t[0] for t in spent.tats],
                        "names": [t[1] for t in spent.tats],
                        "parts": [t[2] for t in spent.tats],
                        "tats": [t[3] for t in spent.tats],
                        "cursor_types": list(spent.cursors),
                        "cursors": list(spent.cursors.values()),
                    },
                )
                cur = await send(
                    "limits_claim",
                    {
                        "ids": [c.id for c in picked],
                        "start": start,
                        "worker_id": worker_id,
                        # The jobs start at the clock the rate was spent at (limits_clock).
                        "now": now if now is not None else _at(clock),
                    },
                )
            claimed = await claimed_rows(cur)
        position = {c.id: i for i, c in enumerate(picked)}
        claimed.sort(
            key=lambda job: position[job.id if isinstance(job, ClaimedJob) else job.lease.job_id]
        )
        retry = [t for t in (decided.retry_at, spent.retry_at) if t is not None]
        return claimed, _at(min(retry, default=None))

    # -- declarations and settings ----------------------------------------------------------

    async def _put(self, conn: Any, scope: str, name: str, row: Settled, actor: str | None) -> None:
        await conn.execute(self._q["limits_put"], put_params(scope, name, row, actor))

    async def _get(self, conn: Any, scope: str, name: str) -> Any:
        cur = await conn.execute(self._q["limits_get"], {"scope": scope, "name": name})
        return await cur.fetchone()

    async def limits_declare(self, limits: list[TypeLimit]) -> None:
        async with self.pool.connection() as conn, conn.transaction():
            for limit in sorted(limits, key=lambda item: item.type):
                row = await self._get(conn, "type", limit.type)
                declared = (limit.rate_limit, limit.partition_concurrency)
                await self._put(conn, "type", limit.type, settle(row, declared=declared), None)

    async def limit_set(
        self,
        scope: str,
        name: str,
        rate: str | object | None,
        concurrency: int | object | None,
        actor: str | None,
    ) -> LimitInfo:
        async with self.pool.connection() as conn, conn.transaction():
            row = await self._get(conn, scope, name)
            settled = settle(row, rate=rate, concurrency=concurrency, unset=UNSET)
            await self._put(conn, scope, name, settled, actor)
        return (await self._listed(None, (scope, name)))[0]

    async def limit_reset(self, scope: str, name: str, actor: str | None) -> LimitInfo:
        async with self.pool.connection() as conn, conn.transaction():
            row = await self._get(conn, scope, name)
            if row is None:
                raise NotFoundError(f"no limit for {scope} {name!r}")
            await self._put(
                conn,
                scope,
                name,
                settle(row, reset=True, unset=UNSET, rate=UNSET, concurrency=UNSET),
                actor,
            )
        return (await self._listed(None, (scope, name)))[0]

    async def limits_list(self, now: datetime | None) -> list[LimitInfo]:
        return await self._listed(now, None)

    async def _listed(self, now: datetime | None, only: tuple[str, str] | None) -> list[LimitInfo]:
        async with self.pool.connection() as conn:

            async def rows(name: str, params: dict[str, Any]) -> list[Any]:
                cur = await conn.execute(self._q[name], params)
                return await cur.fetchall()

            clock = (await rows("limits_clock", {"now": now}))[0][0]
            if only is None:
                found = await rows("limits_all", {})
            else:
                found = [r for r in [await self._get(conn, *only)] if r is not None]
            tats = {
                (r[0], r[1], r[2]): float(r[3]) for r in await rows("limits_tats", {"now": now})
            }
            out = []
            for r in found:
                scope, name = r[0], r[1]
                params = {"since": clock - RATE_WINDOW_SECONDS, "scope": scope, "name": name}
                started = (await rows("limits_load_started", params))[0][0]
                params = {"now": clock, "scope": scope, "name": name}
                loads = [
                    (p, int(d), int(b)) for p, d, b in await rows("limits_load_pending", params)
                ]
                out.append(describe(r, r[8], started / RATE_WINDOW_SECONDS, loads, tats, clock))
            await conn.rollback()
        return out
