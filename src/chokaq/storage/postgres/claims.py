"""The claims area on PostgreSQL: the worker path of a job, fetch (with the bulkheads' turn),
start, heartbeat, progress, release and the finalize that moves it out of hot, and the finish
of the releases a finalize left for later.

Owns turning these operations into the named statements of ``sql/claims.sql``, a batch of
leases or moves as one statement, and the rows back into models. Arguments arrive checked
(``chokaq.storage.claims``); this module checks none and holds no SQL text.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import datetime
from logging import WARNING
from typing import Any, LiteralString

import psycopg

from ...encoding import dump_json
from ...errors import ValidationError
from ...logs import Event, log_event
from ...models import (
    ClaimedJob,
    FailMove,
    Heartbeat,
    HeartbeatAck,
    LeaderTerm,
    Lease,
    Move,
    RetryMove,
    Started,
    SucceedMove,
)
from ..checks import ATTEMPTS_KEPT
from ..driver import UndecodableRow
from .connection import Params, PostgresCore
from .rows import claimed_rows, finite

__all__ = ["BULKHEAD_CACHE_SECONDS", "BULKHEAD_MAX_AGE_SECONDS", "PostgresClaims"]

_SUCCEED, _FAIL, _RETRY = 0, 1, 2
_MISSED = "release"  # what jobs_finalize returns for a release left to jobs_release_missed


def _leases(leases: Sequence[Lease]) -> dict[str, list[str]]:
    """The id / worker / token arrays of a batch of leases."""
    return {
        "ids": [lease.job_id for lease in leases],
        "workers": [lease.worker_id for lease in leases],
        "tokens": [lease.token for lease in leases],
    }


# The queues with a bulkhead are re-read after an empty claim when older than the first (the
# worker is about to wait anyway), and before any claim when older than the second.
BULKHEAD_CACHE_SECONDS = 1.0
BULKHEAD_MAX_AGE_SECONDS = 5.0


class PostgresClaims(PostgresCore):
    """A claimed job's transitions, each guarded by its lease."""

    async def jobs_fetch(
        self,
        worker_id: str,
        limit: int,
        queues: list[str] | None,
        exclude_types: list[str],
        start: bool,
        now: datetime | None,
    ) -> list[ClaimedJob | UndecodableRow]:
        params = {
            "worker_id": worker_id,
            "limit": limit,
            "queues": queues,
            "exclude": exclude_types,
            "start": start,
            "now": now,
        }
        bulkheads = await self._bulkhead_queues(BULKHEAD_MAX_AGE_SECONDS)
        if bulkheads if queues is None else not bulkheads.isdisjoint(queues):
            lock = {"prefix": f"chokaq-bulkhead:{self.schema}:", "queues": queues}
            # Pipelined: BEGIN, the bulkhead lock, the claim and COMMIT cost one round trip.
            async with self.pool.connection() as conn:
                async with conn.pipeline(), conn.transaction():
                    await conn.execute(self._q["jobs_fetch_lock"], lock)
                    cur = await conn.execute(self._q["jobs_fetch"], params)
                jobs = await claimed_rows(cur)
        else:
            # No bulkhead involved: the claim is one statement, atomic on its own.
            async with self._connection("claim") as conn:
                cur = await conn.execute(self._q["jobs_fetch"], params)
                jobs = await claimed_rows(cur)
        if not jobs:
            # Nothing claimed: refresh here rather than on the claim that picks up the next job.
            await self._bulkhead_queues(BULKHEAD_CACHE_SECONDS)
        return jobs

    async def _bulkhead_queues(self, max_age: float) -> frozenset[str]:
        """Queues with max_workers, re-read when older than ``max_age`` seconds (and at once
        after this process changes one). A bulkhead set elsewhere since the last read is still
        enforced by the fetch statement itself, only not serialized against concurrent
        fetchers."""
        if time.monotonic() - self._bulkheads_read_at > max_age:
            rows = await self._rows("jobs_fetch_bulkheads")
            self._bulkheads = frozenset(row[0] for row in rows)
            self._bulkheads_read_at = time.monotonic()
        return self._bulkheads

    async def jobs_start(self, leases: list[Lease], now: datetime | None) -> dict[str, Started]:
        rows = await self._rows("jobs_start", {**_leases(leases), "now": now})
        return {row[0]: Started(attempt_count=row[1], started_at=row[2]) for row in rows}

    async def jobs_heartbeat(
        self, beats: list[Heartbeat], now: datetime | None
    ) -> list[HeartbeatAck]:
        params = {
            **_leases([beat.lease for beat in beats]),
            "progress": [beat.progress for beat in beats],
            "now": now,
        }
        rows = await self._rows("jobs_heartbeat", params, lane="heartbeat")
        seen = {row[0]: row for row in rows}
        acks = []
        for beat in beats:
            row = seen.get(beat.lease.job_id)
            if row is None:
                acks.append(HeartbeatAck(job_id=beat.lease.job_id, owned=False))
            else:
                acks.append(
                    HeartbeatAck(
                        job_id=row[0],
                        owned=True,
                        cancel_requested=row[1],
                        cancel_requested_by=row[2],
                    )
                )
        return acks

    async def jobs_progress(self, lease: Lease, progress: int, now: datetime | None) -> bool:
        params = {**_leases([lease]), "progress": [progress], "now": now}
        return bool(await self._rows("jobs_progress", params))

    async def jobs_release(self, leases: list[Lease], now: datetime | None) -> list[str]:
        rows = await self._rows("jobs_release", {**_leases(leases), "now": now})
        released = {row[0] for row in rows}
        return [lease.job_id for lease in leases if lease.job_id in released]

    async def jobs_finalize(self, moves: list[Move], now: datetime | None) -> list[bool]:
        try:
            rows = await self._finalize_batch(moves, now)
        except psycopg.IntegrityError:
            # The batch failed as a whole because a row already holds one move's id in its
            # target pillar: apply each move alone, in savepoints of one transaction, so that
            # move reports False and the others still apply. Any other error raises.
            rows = []
            async with self.pool.connection() as conn, conn.transaction():
                for move in moves:
                    try:
                        async with conn.transaction():
                            name = _statement(move)
                            params = self._finalize_params([move], now, self.channel)
                            if _failed_attempt(move):
                                await conn.execute(self._q["attempts_record"], _keep(params))
                            rows += await self._run(conn, name, params)
                    except psycopg.IntegrityError:
                        continue
            if any(row[0] == _MISSED for row in rows):
                await self._release_missed()
        applied = {row[0] for row in rows}
        return [move.lease.job_id in applied for move in moves]

    async def _finalize_batch(self, moves: list[Move], now: datetime | None) -> list[Any]:
        """Succeed, fail and retry moves each in one statement; a batch of several kinds (or
        with failed attempts to record) sends them in one transaction and one round trip. A
        move that left a release unfinished (a child enqueued while its parent finished: see
        fragment_release_children) is followed by jobs_release_missed."""
        parts: dict[LiteralString, list[Move]] = {}
        for move in moves:
            parts.setdefault(_statement(move), []).append(move)
        failed = [m for m in moves if _failed_attempt(m)]
        if not failed and len(parts) == 1:
            [(name, part)] = parts.items()
            rows = await self._rows(
                name, self._finalize_params(part, now, self.channel), lane="finalize"
            )
        else:
            batches = list(parts.items())
            async with self._connection("finalize") as conn:
                async with conn.pipeline(), conn.transaction():
                    if failed:  # the history first: the moves clear the leases it reads
                        params = self._finalize_params(failed, now, self.channel)
                        await conn.execute(self._q["attempts_record"], _keep(params))
                    cursors = [
                        await conn.execute(
                            self._q[name], self._finalize_params(part, now, self.channel)
                        )
                        for name, part in batches
                    ]
                rows = [row for cursor in cursors for row in await cursor.fetchall()]
        if any(row[0] == _MISSED for row in rows):
            await self._release_missed()
        return rows

    async def _release_missed(self) -> None:
        """Finish the releases the moves just committed left for later; a failure here is
        left to the elected worker's rescue pass, which runs the same statement (the moves
        themselves are done and must be reported as such)."""
        try:
            await self.jobs_release_missed(None)
        except Exception as exc:
            log_event(
                Event.MAINTENANCE_FAILED,
                "could not finish a release now; the rescue pass will",
                level=WARNING,
                error=f"{type(exc).__name__}: {exc}",
            )

    async def jobs_release_missed(self, fence: LeaderTerm | None) -> int:
        rows = await self._rows("jobs_release_missed", {"channel": self.channel})
        return int(rows[0][0]) if rows else 0

    @staticmethod
    def _finalize_params(moves: Sequence[Move], now: datetime | None, channel: str) -> Params:
        # Keys left out read as NULL in json_to_recordset, which every use of them allows
        # (a NULL refund or count_retry counts as false): a succeed move sends five of 14.
        rows: list[dict[str, Any]] = []
        for move in moves:
            lease = move.lease
            row: dict[str, Any] = {"i": lease.job_id, "w": lease.worker_id, "t": lease.token}
            if move.elapsed_seconds is not None:
                row["el"] = finite(move.elapsed_seconds)
            if isinstance(move, SucceedMove):
                row["k"] = _SUCCEED
                row["du"] = finite(move.duration_seconds)
                if move.result is not None:
                    row["rs"] = move.result
                if move.result_error is not None:
                    row["re"] = move.result_error
            elif isinstance(move, FailMove):
                row["k"] = _FAIL
                row["du"] = finite(move.duration_seconds)
                row["r"] = int(move.reason)
                row["e"] = move.error
                row["a"] = move.actor
                if move.error_type is not None:
                    row["et"] = move.error_type
            elif isinstance(move, RetryMove):
                row["k"] = _RETRY
                row["e"] = move.error
                row["ra"] = move.run_at.isoformat() if move.run_at is not None else None
                row["dl"] = move.delay_seconds
                row["rf"] = move.refund_attempt
                row["cr"] = move.count_retry
                row["du"] = finite(move.duration_seconds)
            else:
                raise ValidationError("moves", f"unknown move type {type(move).__name__}")
            rows.append(row)
        return {"moves": dump_json(rows), "now": now, "channel": channel}


def _failed_attempt(move: Move) -> bool:
    """Whether ``move`` ends an attempt that failed and used its attempt (kept in the job's
    attempt history: ``attempts_record``); a success or a refunded retry is not one."""
    if isinstance(move, FailMove):
        return True
    return isinstance(move, RetryMove) and not move.refund_attempt


def _keep(params: Params) -> Params:
    return {**params, "keep": ATTEMPTS_KEPT}


def _statement(move: Move) -> LiteralString:
    """The finalize statement that applies ``move``."""
    if isinstance(move, SucceedMove):
        return "jobs_finalize"
    return "jobs_finalize_fail" if isinstance(move, FailMove) else "jobs_finalize_retry"
